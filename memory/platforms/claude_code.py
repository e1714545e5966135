"""Claude Code payloads (see shared/spec/claude-code-hooks.md) to and from HookEvent."""

from __future__ import annotations

from typing import Any

from memory.platforms.base import HookEvent, HookInputError, HookResult

platform = "claude-code"

EVENTS = {"context", "session-init", "observation", "file-context", "summarize", "session-end"}

_HOOK_EVENT_NAMES = {
    "context": "SessionStart",
    "session-init": "UserPromptSubmit",
    "observation": "PostToolUse",
    "file-context": "PreToolUse",
    "summarize": "Stop",
    "session-end": "SessionEnd",
}


def _str(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float | bool):
        return str(value)
    raise HookInputError(f"field {key!r} must be a string, got {type(value).__name__}")


def parse(event: str, data: dict[str, Any]) -> HookEvent:
    if event not in EVENTS:
        raise HookInputError(
            f"unknown event {event!r}; expected one of {', '.join(sorted(EVENTS))}"
        )
    session_id = _str(data, "session_id")
    if not session_id:
        raise HookInputError("missing field 'session_id'")
    tool_input = data.get("tool_input") or {}
    if not isinstance(tool_input, dict):
        raise HookInputError("field 'tool_input' must be an object")
    facts = data.get("cmem_file_facts") or {}
    return HookEvent(
        platform=platform,
        event=event,
        session_id=session_id,
        cwd=_str(data, "cwd"),
        hook_event_name=_str(data, "hook_event_name") or _HOOK_EVENT_NAMES[event],
        transcript_path=_str(data, "transcript_path"),
        prompt=_str(data, "prompt"),
        source=_str(data, "source"),
        tool_name=_str(data, "tool_name"),
        tool_input=tool_input,
        tool_response=data.get("tool_response"),
        tool_use_id=_str(data, "tool_use_id"),
        error=_str(data, "error"),
        is_interrupt=bool(data.get("is_interrupt")),
        stop_hook_active=bool(data.get("stop_hook_active")),
        last_assistant_message=_str(data, "last_assistant_message"),
        reason=_str(data, "reason"),
        agent_id=_str(data, "agent_id"),
        agent_type=_str(data, "agent_type"),
        file_facts=facts if isinstance(facts, dict) else {},
        raw=data,
    )


def render(event: HookEvent, result: HookResult) -> dict[str, Any]:
    """Claude Code's JSON output for this event; {} when there is nothing to say."""
    out: dict[str, Any] = {}
    if event.event == "file-context" and result.gate is not None:
        gate = result.gate
        if gate.decision == "deny":
            out["hookSpecificOutput"] = {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": gate.reason,
            }
        elif gate.context:
            # Advisory context only: no permissionDecision, so Claude Code's own permission
            # rules still decide whether the Read may run (an explicit allow would approve it).
            out["hookSpecificOutput"] = {"hookEventName": "PreToolUse", "additionalContext": gate.context}
    elif result.context and event.event in {"context", "session-init", "observation"}:
        out["hookSpecificOutput"] = {
            "hookEventName": event.hook_event_name or _HOOK_EVENT_NAMES[event.event],
            "additionalContext": result.context,
        }
    if result.system_message:
        out["systemMessage"] = result.system_message
    return out
