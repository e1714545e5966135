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

from memory.agents.base import HookEvent, HookResult, field_str
from memory.agents.translate import ToolMap, claude_shaped_output, claude_shaped_parse

platform = "qwen"

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
    parsed = claude_shaped_parse(
        platform, event, data, tools=TOOLS, response=_response,
        delivery=lambda session, tool, d: (session, d.get("timestamp"), tool, d.get("tool_input")),
    )  # fmt: skip
    parsed.tool_turn = (
        event == "session-init" and not parsed.prompt.strip() and "submitted_prompt" not in data
    )
    return parsed


def render(event: HookEvent, result: HookResult) -> dict[str, Any]:
    """Qwen's JSON output for this event (Claude Code's shape); {} when there is nothing to say."""
    return claude_shaped_output(event, result, prefix=MCP_PREFIX, read_tool=READ_TOOL)
