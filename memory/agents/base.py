"""One event shape for every agent: adapters turn each platform's payload into a HookEvent,
and turn a service's platform-neutral answer back into what that platform expects."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Protocol


class HookInputError(ValueError):
    """The hook payload cannot be used; the message says why (answered as a 400)."""


def field_str(data: dict[str, Any], key: str) -> str:
    """`data[key]` as a string ("" when absent); a scalar is stringified, anything else refused."""
    value = data.get(key)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float | bool):
        return str(value)
    raise HookInputError(f"field {key!r} must be a string, got {type(value).__name__}")


def parse_common(
    event: str, data: dict[str, Any], *, events: Collection[str]
) -> tuple[str, dict[str, Any]]:
    """Check what every platform's hook payload needs: a known event, a session id and an
    object `tool_input` (or none). Returns (session_id, tool_input)."""
    if event not in events:
        raise HookInputError(
            f"unknown event {event!r}; expected one of {', '.join(sorted(events))}"
        )
    session_id = field_str(data, "session_id")
    if not session_id:
        raise HookInputError("missing field 'session_id'")
    tool_input = data.get("tool_input") or {}
    if not isinstance(tool_input, dict):
        raise HookInputError("field 'tool_input' must be an object")
    return session_id, tool_input


@dataclass
class HookEvent:
    platform: str
    event: str  # cmem's event name: context, session-init, observation, file-context, summarize, session-end
    session_id: str
    cwd: str = ""
    hook_event_name: str = ""
    transcript_path: str = ""
    prompt: str = ""
    source: str = ""  # SessionStart: startup, resume, clear, compact (codex: fork too)
    tool_name: str = ""
    tool_input: dict[str, Any] = field(default_factory=dict)
    tool_response: Any = None
    tool_use_id: str = ""
    error: str = ""
    is_interrupt: bool = False
    stop_hook_active: bool = False
    last_assistant_message: str = ""
    reason: str = ""
    agent_id: str = ""
    agent_type: str = ""
    # Facts a remote hook client adds about local files (team mode): path -> {size, mtime, sha256}.
    file_facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Files a tool touched that its input does not name in `file_path` (Codex: apply_patch
    # headers, paths of a read-only shell command): (path as written, "read" | "modified").
    tool_files: list[tuple[str, str]] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    # The agent waits for this tool event's answer and reads its additionalContext (Claude
    # Code's synchronous PostToolUseFailure, Codex's PostToolUse): where failure recall
    # (memory/briefing/failure_recall.py) may speak. False where the answer is not read.
    context_read: bool = False
    # The agent fired its prompt event for a turn that is no user prompt (Qwen Code sends
    # UserPromptSubmit again, empty, when tool results go back to the model): nothing to store.
    tool_turn: bool = False

    @property
    def failed(self) -> bool:
        return self.hook_event_name == "PostToolUseFailure" or bool(self.error)


@dataclass
class GateDecision:
    """The file-read gate's answer, platform-neutral."""

    decision: str = "allow"  # allow | deny
    reason: str = ""  # shown to the model on deny
    context: str = ""  # additionalContext on allow


@dataclass
class HookResult:
    """What a service hands back to the adapter for rendering."""

    context: str = ""  # additionalContext (SessionStart, PostToolUse…)
    gate: GateDecision | None = None
    system_message: str = ""  # shown to the user


class Adapter(Protocol):
    platform: str

    def parse(self, event: str, data: dict[str, Any]) -> HookEvent: ...

    def render(self, event: HookEvent, result: HookResult) -> dict[str, Any]: ...
