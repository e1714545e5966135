"""What the adapters of the agents other than Claude Code and Codex share.

Their tools renamed to the Claude Code vocabulary cmem's services speak (`Read` with `file_path`, `Edit`, `Write`,
`Bash` with `command`), a stable id for tool uses the agent sends without one, and the
gate's and index's advice rewritten to name cmem's MCP tools the way that agent shows them.

Translation only: nothing here imports a service.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memory.agents.base import HookEvent, HookResult, field_str, parse_common
from memory.agents.claude_code import HOOK_EVENT_NAMES as CLAUDE_EVENT_NAMES
from memory.agents.codex import patch_files
from memory.agents.codex_shell_reads import shell_read_paths

# cmem's MCP tools (memory/retrieval/mcp_server.py) as the gate and the index name them.
MCP_TOOLS = (
    "get_observations",
    "smart_outline",
    "smart_unfold",
    "get_tool_uses",
    "smart_search",
    "search",
    "timeline",
    "forget",
)
_MCP_CALL = re.compile(r"(?<![\w.])(" + "|".join(MCP_TOOLS) + r")\(")


@dataclass(frozen=True)
class ToolMap:
    """One agent tool as cmem sees it: the Claude Code name, and the agent's argument names
    renamed to Claude Code's (`{"path": "file_path"}`). `ranged` are the arguments that make
    a read partial (the gate then passes, as it does for an explicit offset/limit)."""

    name: str
    keys: dict[str, str] = field(default_factory=dict)
    ranged: tuple[str, ...] = ()


def tool_translate(
    tools: dict[str, ToolMap], tool_name: str, tool_input: dict[str, Any]
) -> tuple[str, dict[str, Any], list[tuple[str, str]]]:
    """(cmem tool name, renamed input, files a shell command reads). Unknown tools keep their
    own name and input: they are stored as the agent called them."""
    mapped = tools.get(tool_name)
    if mapped is None:
        return tool_name, tool_input, []
    out = {mapped.keys.get(k, k): v for k, v in tool_input.items()}
    if any(tool_input.get(k) is not None for k in mapped.ranged):
        # The gate reads an explicit offset as "a part of the file": it passes.
        out.setdefault("offset", tool_input.get(mapped.ranged[0]) or 0)
    files: list[tuple[str, str]] = []
    command = out.get("command")
    if mapped.name == "Bash" and isinstance(command, str):
        files = [(path, "read") for path in shell_read_paths(command)]
    elif mapped.name == "apply_patch" and isinstance(command, str):
        files = [(path, "modified") for path in patch_files(command)]
    return mapped.name, out, files


def plain_response(data: dict[str, Any]) -> tuple[Any, str]:
    """Claude Code's `tool_response` as the model got it, and `error` when the tool failed."""
    return data.get("tool_response"), field_str(data, "error")


def claude_shaped_parse(
    platform: str,
    event: str,
    data: dict[str, Any],
    *,
    tools: dict[str, ToolMap],
    delivery: Callable[[str, str, dict[str, Any]], tuple[Any, ...]],
    response: Callable[[dict[str, Any]], tuple[Any, str]] = plain_response,
) -> HookEvent:
    """The HookEvent of an agent that sends Claude Code's hook payloads (Qwen Code, Factory
    Droid) with tools of its own (`tools`, renamed to Claude Code's). Where a tool use comes
    without a `tool_use_id`, `delivery(session_id, agent_tool, data)` names the fields that
    make one stable; `response(data)` reads what the model got and the tool's error."""
    session_id, tool_input = parse_common(event, data, events=set(CLAUDE_EVENT_NAMES))
    agent_tool = field_str(data, "tool_name")
    tool_name, tool_input, tool_files = tool_translate(tools, agent_tool, tool_input)
    tool_response, error = response(data)
    raw = dict(data)
    if agent_tool:
        raw["agent_tool_name"] = agent_tool
    facts = data.get("cmem_file_facts") or {}
    return HookEvent(
        platform=platform,
        event=event,
        session_id=session_id,
        cwd=field_str(data, "cwd"),
        hook_event_name=field_str(data, "hook_event_name") or CLAUDE_EVENT_NAMES[event],
        transcript_path=field_str(data, "transcript_path"),
        prompt=field_str(data, "prompt"),
        source=field_str(data, "source"),
        tool_name=tool_name,
        tool_input=tool_input,
        tool_response=tool_response,
        tool_use_id=(
            field_str(data, "tool_use_id") or tool_use_id(*delivery(session_id, agent_tool, data))
            if event == "observation"
            else ""
        ),
        error=error,
        is_interrupt=bool(data.get("is_interrupt")),
        stop_hook_active=bool(data.get("stop_hook_active")),
        last_assistant_message=field_str(data, "last_assistant_message"),
        reason=field_str(data, "reason"),
        agent_id=field_str(data, "agent_id"),
        file_facts=facts if isinstance(facts, dict) else {},
        tool_files=tool_files,
        raw=raw,
    )


def tool_use_id(*parts: Any) -> str:
    """A stable id for a tool use the agent does not number: the same delivery (a retry, a
    spool replay) gets the same id, so the observation is stored once."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return "cmem-" + hashlib.sha256(text.encode()).hexdigest()[:32]


def mcp_names(text: str, *, prefix: str, read_tool: str) -> str:
    """The gate's and index's advice for an agent: `get_observations(` becomes the name the
    agent lists the MCP tool under (`prefix` + name), and the Read retry names its read tool."""
    if not text:
        return text
    text = _MCP_CALL.sub(lambda m: f"{prefix}{m.group(1)}(", text)
    return text.replace(
        "Read the file again: a second Read passes", f"Call {read_tool} again: a second read passes"
    ).replace("the Read result is the current file", f"the {read_tool} result is the current file")


# The events whose output may carry `additionalContext` in Claude Code's hook JSON.
CONTEXT_EVENTS = frozenset({"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse"})


def claude_shaped_output(
    event: HookEvent, result: HookResult, *, prefix: str, read_tool: str
) -> dict[str, Any]:
    """The output of an agent that reads Claude Code's hook JSON (Qwen Code, Factory Droid)
    for the event; {} when there is nothing to say. A refusal is a PreToolUse deny whose
    reason goes to the model as the tool's error (the turn goes on); other context is
    `additionalContext`, with no permissionDecision: an explicit "allow" would skip the
    agent's own approval of the tool. Advice names cmem's tools as the agent shows them."""
    # The name the agent sent wins: hookEventName must be the event being answered.
    name = event.hook_event_name or CLAUDE_EVENT_NAMES[event.event]
    out: dict[str, Any] = {}
    gate = result.gate
    if event.event == "file-context" and gate is not None and gate.decision == "deny":
        out["hookSpecificOutput"] = {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": mcp_names(gate.reason, prefix=prefix, read_tool=read_tool),
        }
    else:
        context = result.context or (gate.context if gate is not None else "")
        if context and name in CONTEXT_EVENTS:
            out["hookSpecificOutput"] = {
                "hookEventName": name,
                "additionalContext": mcp_names(context, prefix=prefix, read_tool=read_tool),
            }
    if result.system_message:
        out["systemMessage"] = result.system_message
    return out
