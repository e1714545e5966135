"""Claude Code payloads (see docs/reference/claude-code-hooks.md) to and from HookEvent."""

from __future__ import annotations

from typing import Any

from memory.agents.base import HookEvent, HookResult, field_str, parse_common

platform = "claude-code"

EVENTS = {"context", "session-init", "observation", "file-context", "summarize", "session-end"}

HOOK_EVENT_NAMES = {
    "context": "SessionStart",
    "session-init": "UserPromptSubmit",
    "observation": "PostToolUse",
    "file-context": "PreToolUse",
    "summarize": "Stop",
    "session-end": "SessionEnd",
}


# The tool events whose hook `cmem install` runs synchronously, so their answer's context
# reaches the model's next request (PostToolUse stays async: it must not slow every tool).
CONTEXT_READ = {"PostToolUseFailure"}


def parse(event: str, data: dict[str, Any]) -> HookEvent:
    session_id, tool_input = parse_common(event, data, events=EVENTS)
    facts = data.get("cmem_file_facts") or {}
    hook_event_name = field_str(data, "hook_event_name") or HOOK_EVENT_NAMES[event]
    return HookEvent(
        platform=platform,
        event=event,
        session_id=session_id,
        cwd=field_str(data, "cwd"),
        hook_event_name=hook_event_name,
        transcript_path=field_str(data, "transcript_path"),
        prompt=field_str(data, "prompt"),
        source=field_str(data, "source"),
        tool_name=field_str(data, "tool_name"),
        tool_input=tool_input,
        tool_response=data.get("tool_response"),
        tool_use_id=field_str(data, "tool_use_id"),
        error=field_str(data, "error"),
        is_interrupt=bool(data.get("is_interrupt")),
        stop_hook_active=bool(data.get("stop_hook_active")),
        last_assistant_message=field_str(data, "last_assistant_message"),
        reason=field_str(data, "reason"),
        agent_id=field_str(data, "agent_id"),
        agent_type=field_str(data, "agent_type"),
        file_facts=facts if isinstance(facts, dict) else {},
        raw=data,
        context_read=event == "observation" and hook_event_name in CONTEXT_READ,
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
            out["hookSpecificOutput"] = {
                "hookEventName": "PreToolUse",
                "additionalContext": gate.context,
            }
    elif result.context and event.event in {"context", "session-init", "observation"}:
        out["hookSpecificOutput"] = {
            "hookEventName": event.hook_event_name or HOOK_EVENT_NAMES[event.event],
            "additionalContext": result.context,
        }
    if result.system_message:
        out["systemMessage"] = result.system_message
    return out
