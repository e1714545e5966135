"""Gemini CLI payloads (docs/guide/agents/gemini-cli.md) to and from HookEvent.

Gemini's hooks are Claude Code's in shape (snake_case stdin, `hookSpecificOutput` out), with
its own event names (BeforeAgent, AfterTool, AfterAgent…) and tool names (`read_file`,
`run_shell_command`…), which are renamed to cmem's here. Two rules of its own:
- `decision: "deny"` means "refuse" on BeforeTool but "retry the turn" on AfterAgent, so a
  decision is only ever written for BeforeTool;
- BeforeTool takes no additionalContext (AfterTool does): the gate's advisory allow is
  therefore silent here, and only its refusals reach the model.
"""

from __future__ import annotations

from typing import Any

from memory.agents.base import HookEvent, HookResult, field_str, parse_common
from memory.agents.translate import ToolMap, mcp_names, tool_translate, tool_use_id

platform = "gemini"

HOOK_EVENT_NAMES = {
    "context": "SessionStart",
    "session-init": "BeforeAgent",
    "observation": "AfterTool",
    "file-context": "BeforeTool",
    "summarize": "AfterAgent",
    "session-end": "SessionEnd",
}
EVENTS = set(HOOK_EVENT_NAMES)
# Events whose hookSpecificOutput.additionalContext Gemini reads (hooks/types.ts).
CONTEXT_EVENTS = {"SessionStart", "BeforeAgent", "AfterTool"}
TOOLS = {
    "read_file": ToolMap("Read", ranged=("start_line", "end_line", "offset", "limit")),
    "write_file": ToolMap("Write"),
    "replace": ToolMap("Edit"),
    "run_shell_command": ToolMap("Bash"),
}
READ_TOOL = "read_file"
# Gemini lists an MCP server's tools as mcp_<server>_<tool> (tools/mcp-tool.ts).
MCP_PREFIX = "mcp_cmem_"


def _response(data: dict[str, Any]) -> tuple[Any, str]:
    """AfterTool's `tool_response` is {llmContent, returnDisplay, error?}: what the model got,
    and the error when the tool failed."""
    response = data.get("tool_response")
    if not isinstance(response, dict):
        return response, ""
    error = response.get("error")
    message = error.get("message") if isinstance(error, dict) else error
    content = response.get("llmContent")
    return (content if content is not None else response), str(message or "")


def parse(event: str, data: dict[str, Any]) -> HookEvent:
    session_id, tool_input = parse_common(event, data, events=EVENTS)
    agent_tool = field_str(data, "tool_name")
    tool_name, tool_input, tool_files = tool_translate(TOOLS, agent_tool, tool_input)
    tool_response, error = _response(data)
    raw = dict(data)
    if agent_tool:
        raw["agent_tool_name"] = agent_tool
    facts = data.get("cmem_file_facts") or {}
    return HookEvent(
        platform=platform,
        event=event,
        session_id=session_id,
        cwd=field_str(data, "cwd"),
        hook_event_name=field_str(data, "hook_event_name") or HOOK_EVENT_NAMES[event],
        transcript_path=field_str(data, "transcript_path"),
        prompt=field_str(data, "prompt"),
        source=field_str(data, "source") or field_str(data, "trigger"),
        tool_name=tool_name,
        tool_input=tool_input,
        tool_response=tool_response,
        # Gemini numbers no tool use: the delivery's own fields make a stable id.
        tool_use_id=(
            tool_use_id(session_id, data.get("timestamp"), agent_tool, data.get("tool_input"))
            if event == "observation"
            else ""
        ),
        error=error,
        stop_hook_active=bool(data.get("stop_hook_active")),
        last_assistant_message=field_str(data, "prompt_response"),
        reason=field_str(data, "reason"),
        file_facts=facts if isinstance(facts, dict) else {},
        tool_files=tool_files,
        raw=raw,
    )


def _advice(text: str) -> str:
    return mcp_names(text, prefix=MCP_PREFIX, read_tool=READ_TOOL)


def render(event: HookEvent, result: HookResult) -> dict[str, Any]:
    """Gemini's JSON output for this event; {} when there is nothing to say."""
    name = event.hook_event_name or HOOK_EVENT_NAMES[event.event]
    out: dict[str, Any] = {}
    gate = result.gate
    if name == "BeforeTool" and gate is not None and gate.decision == "deny":
        # `reason` goes to the model as the tool's error; the turn goes on.
        out = {"decision": "deny", "reason": _advice(gate.reason)}
    elif result.context and name in CONTEXT_EVENTS:
        out["hookSpecificOutput"] = {
            "hookEventName": name,
            "additionalContext": _advice(result.context),
        }
    if result.system_message:
        out["systemMessage"] = result.system_message
    return out
