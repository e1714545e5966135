"""Codex 0.171's strict validation of hook output, as observed (docs/reference/codex-hooks.md,
fixtures output_validation.table.json): an object breaking any rule is dropped whole."""

from __future__ import annotations

from typing import Any

COMMON_KEYS = {"continue", "stopReason", "suppressOutput", "systemMessage"}
TOP_KEYS = {
    "SessionStart": COMMON_KEYS | {"hookSpecificOutput"},
    "UserPromptSubmit": COMMON_KEYS | {"hookSpecificOutput", "decision", "reason"},
    "PreToolUse": COMMON_KEYS | {"hookSpecificOutput", "decision", "reason"},
    "PostToolUse": COMMON_KEYS | {"hookSpecificOutput", "decision", "reason"},
    "SubagentStart": COMMON_KEYS | {"hookSpecificOutput"},
    "Stop": COMMON_KEYS | {"decision", "reason"},
    "SessionEnd": COMMON_KEYS,
    "PostCompact": COMMON_KEYS,
}
SPECIFIC_KEYS = {
    "SessionStart": {"hookEventName", "additionalContext"},
    "UserPromptSubmit": {"hookEventName", "additionalContext"},
    "PreToolUse": {
        "hookEventName",
        "permissionDecision",
        "permissionDecisionReason",
        "additionalContext",
    },
    "PostToolUse": {"hookEventName", "additionalContext"},
    "SubagentStart": {"hookEventName", "additionalContext"},
}
TOOL_EVENTS = {"PreToolUse", "PostToolUse"}
CONTEXT_MAX = 10_000


def strict_errors(event: str, output: Any) -> list[str]:
    """Why Codex would drop `output` as the answer to `event` ([] when it is valid)."""
    if not isinstance(output, dict):
        return ["not a JSON object"]
    errors = [f"unknown key {k!r}" for k in output if k not in TOP_KEYS[event]]
    if output.get("suppressOutput") is True and event in TOOL_EVENTS:
        errors.append("suppressOutput on a tool event")
    if "stopReason" in output and event == "PreToolUse":
        errors.append("stopReason on PreToolUse")
    specific = output.get("hookSpecificOutput")
    if specific is not None:
        if not isinstance(specific, dict):
            return [*errors, "hookSpecificOutput is not an object"]
        if specific.get("hookEventName") != event:
            errors.append(f"hookEventName is {specific.get('hookEventName')!r}, not {event!r}")
        errors += [
            f"unknown hookSpecificOutput key {k!r}"
            for k in specific
            if k not in SPECIFIC_KEYS.get(event, set())
        ]
        context = specific.get("additionalContext")
        if context is not None and (not isinstance(context, str) or not context):
            errors.append("additionalContext must be a non-empty string")
        if isinstance(context, str) and len(context) > CONTEXT_MAX:
            errors.append("additionalContext longer than Codex keeps")
        if specific.get("permissionDecision") not in {None, "allow", "deny", "ask"}:
            errors.append("bad permissionDecision")
    return errors
