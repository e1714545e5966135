"""GitHub Copilot CLI payloads (docs/guide/agents/copilot-cli.md) to and from HookEvent.

cmem installs Copilot's own hook format (`version: 1`, camelCase events), whose stdin is
camelCase too: `sessionId`, `toolName`, `toolArgs` (an object, or a JSON string in older
releases), `toolResult: {resultType, textResultForLlm}`. The snake_case variant Copilot
sends to PascalCase-named hooks is read as well. Output is flat: `additionalContext`,
`permissionDecision` / `permissionDecisionReason` (preToolUse only).
"""

from __future__ import annotations

import json
from typing import Any

from memory.agents.base import HookEvent, HookInputError, HookResult, field_str, parse_common
from memory.agents.translate import ToolMap, mcp_names, tool_translate, tool_use_id

platform = "copilot"

HOOK_EVENT_NAMES = {
    "context": "sessionStart",
    "session-init": "userPromptSubmitted",
    "observation": "postToolUse",
    "file-context": "preToolUse",
    "summarize": "agentStop",
    "session-end": "sessionEnd",
}
EVENTS = set(HOOK_EVENT_NAMES)
CONTEXT_EVENTS = {"sessionStart", "userPromptSubmitted", "preToolUse", "postToolUse"}
TOOLS = {
    "view": ToolMap("Read", keys={"path": "file_path"}, ranged=("view_range",)),
    "create": ToolMap("Write", keys={"path": "file_path", "file_text": "content"}),
    "edit": ToolMap(
        "Edit", keys={"path": "file_path", "old_str": "old_string", "new_str": "new_string"}
    ),
    "bash": ToolMap("Bash"),
    "apply_patch": ToolMap("apply_patch"),
    # The names Copilot gives Claude-format hooks.
    "Read": ToolMap("Read", keys={"path": "file_path"}, ranged=("view_range",)),
}
READ_TOOL = "view"
# Copilot lists an MCP server's tools as <server>-<tool>.
MCP_PREFIX = "cmem-"


def _first(data: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if data.get(key) is not None:
            return data[key]
    return None


def _args(data: dict[str, Any]) -> dict[str, Any]:
    args = _first(data, "toolArgs", "tool_input")
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            # A freeform tool's input (apply_patch): kept as Codex sends it, in `command`.
            return {"command": args}
    if args is None:
        return {}
    if not isinstance(args, dict):
        raise HookInputError("field 'toolArgs' must be an object")
    return args


def _result(data: dict[str, Any]) -> tuple[Any, str, bool]:
    """(what the model got, error text, failed) from `toolResult` / `tool_result`."""
    result = _first(data, "toolResult", "tool_result")
    if not isinstance(result, dict):
        return result, field_str(data, "error"), bool(data.get("error"))
    kind = str(_first(result, "resultType", "result_type") or "")
    text = _first(result, "textResultForLlm", "text_result_for_llm")
    failed = kind in {"failure", "error", "denied", "rejected"}
    error = str(_first(result, "error") or (text if failed else "") or "")
    return (text if text is not None else result), error, failed


def parse(event: str, data: dict[str, Any]) -> HookEvent:
    # One shape for both Copilot spellings before the shared checks.
    common = {
        "session_id": _first(data, "sessionId", "session_id"),
        "tool_input": _args(data),
    }
    session_id, tool_input = parse_common(event, common, events=EVENTS)
    agent_tool = str(_first(data, "toolName", "tool_name") or "")
    tool_name, tool_input, tool_files = tool_translate(TOOLS, agent_tool, tool_input)
    response, error, failed = _result(data)
    raw = dict(data)
    if agent_tool:
        raw["agent_tool_name"] = agent_tool
    name = field_str(data, "hook_event_name") or HOOK_EVENT_NAMES[event]
    if event == "observation" and failed and name == "postToolUse":
        name = "postToolUseFailure"
    facts = data.get("cmem_file_facts") or {}
    return HookEvent(
        platform=platform,
        event=event,
        session_id=session_id,
        cwd=field_str(data, "cwd"),
        hook_event_name=name,
        transcript_path=str(_first(data, "transcriptPath", "transcript_path") or ""),
        prompt=field_str(data, "prompt"),
        # Copilot says "new" where Claude Code says "startup" (the context service's word).
        source={"new": "startup"}.get(field_str(data, "source"), field_str(data, "source")),
        tool_name=tool_name,
        tool_input=tool_input,
        tool_response=response,
        tool_use_id=(
            str(_first(data, "toolCallId", "tool_use_id") or "")
            or tool_use_id(session_id, data.get("timestamp"), agent_tool, common["tool_input"])
            if event == "observation"
            else ""
        ),
        error=error or ("tool failed" if failed else ""),
        stop_hook_active=bool(data.get("stop_hook_active")),
        reason=field_str(data, "reason"),
        file_facts=facts if isinstance(facts, dict) else {},
        tool_files=tool_files,
        raw=raw,
    )


def _advice(text: str) -> str:
    return mcp_names(text, prefix=MCP_PREFIX, read_tool=READ_TOOL)


def render(event: HookEvent, result: HookResult) -> dict[str, Any]:
    """Copilot's JSON output for this event; {} when there is nothing to say."""
    name = event.hook_event_name or HOOK_EVENT_NAMES[event.event]
    out: dict[str, Any] = {}
    gate = result.gate
    if event.event == "file-context" and gate is not None and gate.decision == "deny":
        out = {"permissionDecision": "deny", "permissionDecisionReason": _advice(gate.reason)}
    else:
        context = result.context or (gate.context if gate is not None else "")
        # No permissionDecision on an allow: an explicit "allow" would skip Copilot's own
        # approval prompt for the tool.
        if context and (name in CONTEXT_EVENTS or event.event == "file-context"):
            out["additionalContext"] = _advice(context)
    return out
