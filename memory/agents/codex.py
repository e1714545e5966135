"""Codex CLI payloads (docs/reference/codex-hooks.md) to and from HookEvent.

Codex validates hook output strictly and drops an invalid object whole, silently: so
`render` only ever builds the few shapes Codex accepts, with `hookEventName` always set,
no `suppressOutput` and nothing unknown, and `{}` when there is nothing to say.
"""

from __future__ import annotations

import re
from typing import Any

from memory.agents.base import HookEvent, HookResult, field_str, parse_common
from memory.agents.codex_shell_reads import shell_read_paths

platform = "codex"

# cmem event -> the Codex hook that sends it.
HOOK_EVENT_NAMES = {
    "context": "SessionStart",
    "session-init": "UserPromptSubmit",
    "observation": "PostToolUse",
    "file-context": "PreToolUse",
    "summarize": "Stop",
    "session-end": "SessionEnd",
    "subagent-context": "SubagentStart",
    "compaction": "PostCompact",
}
EVENTS = set(HOOK_EVENT_NAMES)
# Events whose output may carry additionalContext (each piece becomes a developer message).
CONTEXT_EVENTS = {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "SubagentStart"}
# Events whose top-level `systemMessage` Codex was seen to accept (output_validation.table).
SYSTEM_MESSAGE_EVENTS = {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse"}
MAX_CONTEXT_CHARS = 10_000

_PATCH_FILE = re.compile(
    r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.M
)


def patch_files(patch: str) -> list[str]:
    """The files an apply_patch touches, from its `*** Add/Update/Delete File:` and
    `*** Move to:` headers, in order, once each."""
    seen: dict[str, None] = {}
    for match in _PATCH_FILE.finditer(patch):
        seen.setdefault(match.group(1) or match.group(2), None)
    return list(seen)


def _tool_files(tool_name: str, tool_input: dict[str, Any]) -> list[tuple[str, str]]:
    command = tool_input.get("command")
    if not isinstance(command, str):
        return []
    if tool_name == "apply_patch":
        return [(path, "modified") for path in patch_files(command)]
    if tool_name == "Bash":
        return [(path, "read") for path in shell_read_paths(command)]
    return []


def parse(event: str, data: dict[str, Any]) -> HookEvent:
    session_id, tool_input = parse_common(event, data, events=EVENTS)
    raw = dict(data)
    # A Codex turn is what Claude Code calls a prompt: the capture services key private
    # turns and one-summary-per-turn on `prompt_id`.
    if not raw.get("prompt_id") and raw.get("turn_id"):
        raw["prompt_id"] = field_str(data, "turn_id")
    facts = data.get("cmem_file_facts") or {}
    tool_name = field_str(data, "tool_name")
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
        # Codex sends the output only, as a string, and fires PostToolUse for failed
        # commands too (no exit code): a failure is the compressor's call, not ours.
        tool_response=data.get("tool_response"),
        tool_use_id=field_str(data, "tool_use_id"),
        stop_hook_active=bool(data.get("stop_hook_active")),
        last_assistant_message=field_str(data, "last_assistant_message"),
        reason=field_str(data, "reason"),
        agent_id=field_str(data, "agent_id"),
        agent_type=field_str(data, "agent_type"),
        file_facts=facts if isinstance(facts, dict) else {},
        tool_files=_tool_files(tool_name, tool_input),
        raw=raw,
        # PostToolUse is synchronous in Codex and its context becomes a developer message.
        context_read=event == "observation",
    )


# The gate's refusal and advice speak of Claude Code's Read tool. Codex reads files through
# its shell, where each path of a read-only command is decided as a read of the whole file
# (memory/hooks/codex_rules.py): a line range is no way past the gate, running the same
# command again is.
SHELL_WORDS = (
    ("the Read result is the current file", "the command's output is the current file"),
    (
        "Read the file again: a second Read passes",
        "Run the same command again: a second read passes",
    ),
    (",\n  or Read with offset/limit for its line range.", "."),
)


def shell_words(text: str) -> str:
    """The gate's text in Codex's terms."""
    for claude_words, codex_words in SHELL_WORDS:
        text = text.replace(claude_words, codex_words)
    return text


def _fit(text: str) -> str:
    """At most MAX_CONTEXT_CHARS, cut at a line end so no row is half shown."""
    if len(text) <= MAX_CONTEXT_CHARS:
        return text
    cut = text.rfind("\n", 0, MAX_CONTEXT_CHARS)
    return text[: cut if cut > 0 else MAX_CONTEXT_CHARS]


def render(event: HookEvent, result: HookResult) -> dict[str, Any]:
    """Codex's JSON output for this event, valid under its strict validation."""
    # The name Codex sent wins: hookEventName must be the event being answered.
    name = event.hook_event_name or HOOK_EVENT_NAMES[event.event]
    out: dict[str, Any] = {}
    gate = result.gate
    if name == "PreToolUse" and gate is not None and gate.decision == "deny":
        out["hookSpecificOutput"] = {
            "hookEventName": name,
            "permissionDecision": "deny",
            "permissionDecisionReason": _fit(shell_words(gate.reason)),
        }
    else:
        context = result.context or (gate.context if gate is not None else "")
        if context and name in CONTEXT_EVENTS:
            # No permissionDecision on an allow: advice must not override Codex's own
            # approval policy for the command.
            out["hookSpecificOutput"] = {
                "hookEventName": name,
                "additionalContext": _fit(shell_words(context)),
            }
    if result.system_message and name in SYSTEM_MESSAGE_EVENTS:
        out["systemMessage"] = result.system_message
    return out
