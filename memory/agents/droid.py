"""Factory Droid payloads (docs/guide/agents/droid.md) to and from HookEvent.

Droid's hooks are Claude Code's in events and shapes (snake_case stdin,
`hookSpecificOutput` out), and its read tool is Claude Code's `Read` with `file_path`; its
shell tool is `Execute` and its file-writing tool `Create`, renamed here. Seen with the real
CLI (0.225.2): the tool payloads carry no `tool_use_id`, so the adapter derives a stable one;
`tool_response` is the text the model got.
"""

from __future__ import annotations

from typing import Any

from memory.agents.base import HookEvent, HookResult, field_str, parse_common
from memory.agents.translate import ToolMap, claude_shaped_output, tool_translate, tool_use_id

platform = "droid"

HOOK_EVENT_NAMES = {
    "context": "SessionStart",
    "session-init": "UserPromptSubmit",
    "observation": "PostToolUse",
    "file-context": "PreToolUse",
    "summarize": "Stop",
    "session-end": "SessionEnd",
}
EVENTS = set(HOOK_EVENT_NAMES)
# Events whose hookSpecificOutput.additionalContext Droid reads, as Claude Code does.
TOOLS = {
    "Execute": ToolMap("Bash"),
    "Create": ToolMap("Write"),
}
READ_TOOL = "Read"
# Droid lists an MCP server's tools as <server>___<tool> (seen in the model's tool list).
MCP_PREFIX = "cmem___"


def parse(event: str, data: dict[str, Any]) -> HookEvent:
    session_id, tool_input = parse_common(event, data, events=EVENTS)
    agent_tool = field_str(data, "tool_name")
    tool_name, tool_input, tool_files = tool_translate(TOOLS, agent_tool, tool_input)
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
        source=field_str(data, "source"),
        tool_name=tool_name,
        tool_input=tool_input,
        tool_response=data.get("tool_response"),
        # Droid numbers no tool use in its hook payloads: the delivery's own fields make one.
        tool_use_id=(
            field_str(data, "tool_use_id")
            or tool_use_id(
                session_id, agent_tool, data.get("tool_input"), data.get("tool_response")
            )
            if event == "observation"
            else ""
        ),
        error=field_str(data, "error"),
        stop_hook_active=bool(data.get("stop_hook_active")),
        reason=field_str(data, "reason"),
        file_facts=facts if isinstance(facts, dict) else {},
        tool_files=tool_files,
        raw=raw,
    )


def render(event: HookEvent, result: HookResult) -> dict[str, Any]:
    """Droid's JSON output for this event (Claude Code's shape); {} when there is nothing to say."""
    return claude_shaped_output(
        event,
        result,
        name=event.hook_event_name or HOOK_EVENT_NAMES[event.event],
        prefix=MCP_PREFIX,
        read_tool=READ_TOOL,
    )
