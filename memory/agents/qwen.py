"""Qwen Code payloads (docs/guide/agents/qwen-code.md) to and from HookEvent.

Qwen Code forked the Gemini CLI but took Claude Code's hook events and shapes: the events
are named SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop, SessionEnd; stdin
is snake_case with a `tool_use_id`; the answer is `hookSpecificOutput` with
`permissionDecision` on PreToolUse. Only its tool names (`read_file`, `edit`,
`write_file`, `run_shell_command`, arguments already Claude Code's) are renamed here. Two
rules of its own, both seen in the real CLI (0.24.4):
- UserPromptSubmit fires again, with an empty `prompt` and no `submitted_prompt`, when the
  tool results go back to the model: that turn is marked `tool_turn` (not a user prompt);
- `tool_response` is Gemini's {llmContent, returnDisplay, error?}.
"""

from __future__ import annotations

from typing import Any

from memory.agents.base import HookEvent, HookResult, field_str, parse_common
from memory.agents.translate import ToolMap, claude_shaped_output, tool_translate, tool_use_id

platform = "qwen"

HOOK_EVENT_NAMES = {
    "context": "SessionStart",
    "session-init": "UserPromptSubmit",
    "observation": "PostToolUse",
    "file-context": "PreToolUse",
    "summarize": "Stop",
    "session-end": "SessionEnd",
}
EVENTS = set(HOOK_EVENT_NAMES)
# Events whose hookSpecificOutput.additionalContext Qwen reads (hooks/types.ts, and
# firePreToolUseHook for PreToolUse's on an allow).
TOOLS = {
    "read_file": ToolMap("Read", ranged=("offset", "limit", "pages")),
    "write_file": ToolMap("Write"),
    "edit": ToolMap("Edit"),
    "run_shell_command": ToolMap("Bash"),
}
READ_TOOL = "read_file"
# Qwen lists an MCP server's tools as mcp__<server>__<tool>, as Claude Code does.
MCP_PREFIX = "mcp__cmem__"


def _response(data: dict[str, Any]) -> tuple[Any, str]:
    """PostToolUse's `tool_response` is {llmContent, returnDisplay, error?}: what the model
    got, and the error when the tool failed (PostToolUseFailure sends `error` itself)."""
    response = data.get("tool_response")
    if not isinstance(response, dict):
        return response, field_str(data, "error")
    error = response.get("error")
    message = error.get("message") if isinstance(error, dict) else error
    content = response.get("llmContent")
    return (content if content is not None else response), str(
        message or field_str(data, "error") or ""
    )


def parse(event: str, data: dict[str, Any]) -> HookEvent:
    session_id, tool_input = parse_common(event, data, events=EVENTS)
    agent_tool = field_str(data, "tool_name")
    tool_name, tool_input, tool_files = tool_translate(TOOLS, agent_tool, tool_input)
    tool_response, error = _response(data)
    raw = dict(data)
    if agent_tool:
        raw["agent_tool_name"] = agent_tool
    facts = data.get("cmem_file_facts") or {}
    prompt = field_str(data, "prompt")
    return HookEvent(
        platform=platform,
        event=event,
        session_id=session_id,
        cwd=field_str(data, "cwd"),
        hook_event_name=field_str(data, "hook_event_name") or HOOK_EVENT_NAMES[event],
        transcript_path=field_str(data, "transcript_path"),
        prompt=prompt,
        source=field_str(data, "source"),
        tool_name=tool_name,
        tool_input=tool_input,
        tool_response=tool_response,
        tool_use_id=(
            field_str(data, "tool_use_id")
            or tool_use_id(session_id, data.get("timestamp"), agent_tool, data.get("tool_input"))
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
        tool_turn=(
            event == "session-init" and not prompt.strip() and "submitted_prompt" not in data
        ),
    )


def render(event: HookEvent, result: HookResult) -> dict[str, Any]:
    """Qwen's JSON output for this event (Claude Code's shape); {} when there is nothing to say."""
    return claude_shaped_output(
        event,
        result,
        name=event.hook_event_name or HOOK_EVENT_NAMES[event.event],
        prefix=MCP_PREFIX,
        read_tool=READ_TOOL,
    )
