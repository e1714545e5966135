"""Continue CLI (`cn`) events, as `cmem watch` builds them from its session files.

Continue's CLI has a hooks service that nothing fires (docs/guide/agents/continue-cli.md), so
cmem follows the sessions it writes (`~/.continue/sessions/<id>.json`) instead
(memory/watch/continue_sessions.py) and posts each new prompt, tool use and finished turn
here in Claude Code's payload shape, with Continue's tool names and arguments. Every such
event is a replay of something already over: nobody waits for an answer, and a delivery
repeated after a kill is the same event (`cmem_spooled`, as for the hook client's spool).
"""

from __future__ import annotations

from typing import Any

from memory.agents.base import HookEvent, HookResult, field_str, parse_common
from memory.agents.translate import ToolMap, tool_translate

platform = "continue"

HOOK_EVENT_NAMES = {
    "session-init": "UserPromptSubmit",
    "observation": "PostToolUse",
    "summarize": "Stop",
    "session-end": "SessionEnd",
}
EVENTS = set(HOOK_EVENT_NAMES)
# Continue CLI 1.5.47's built-in tools (their `parsedArgs` as the session file keeps them).
TOOLS = {
    "Read": ToolMap("Read", keys={"filepath": "file_path"}),
    "Write": ToolMap("Write", keys={"filepath": "file_path"}),
    "Edit": ToolMap("Edit", keys={"filepath": "file_path"}),
    "MultiEdit": ToolMap("MultiEdit", keys={"filepath": "file_path"}),
    "Bash": ToolMap("Bash"),
}


def parse(event: str, data: dict[str, Any]) -> HookEvent:
    session_id, tool_input = parse_common(event, data, events=EVENTS)
    agent_tool = field_str(data, "tool_name")
    tool_name, tool_input, tool_files = tool_translate(TOOLS, agent_tool, tool_input)
    raw = dict(data)
    raw["cmem_spooled"] = True  # a replay: stored once, and nobody waits for context
    if agent_tool:
        raw["agent_tool_name"] = agent_tool
    return HookEvent(
        platform=platform,
        event=event,
        session_id=session_id,
        cwd=field_str(data, "cwd"),
        hook_event_name=HOOK_EVENT_NAMES[event],
        transcript_path=field_str(data, "transcript_path"),
        prompt=field_str(data, "prompt"),
        tool_name=tool_name,
        tool_input=tool_input,
        tool_response=data.get("tool_response"),
        tool_use_id=field_str(data, "tool_use_id") if event == "observation" else "",
        error=field_str(data, "error"),
        last_assistant_message=field_str(data, "last_assistant_message"),
        tool_files=tool_files,
        raw=raw,
    )


def render(event: HookEvent, result: HookResult) -> dict[str, Any]:
    """Nothing goes back: no agent reads the answer of a replayed event."""
    return {}
