"""The one entry for every hook request: parse once, pick the adapter, call one service."""

from __future__ import annotations

import json
import math
import re
from types import ModuleType
from typing import Any

from memory import config, projects
from memory.agents import (
    claude_code,
    codex,
    continue_cli,
    copilot,
    droid,
    gemini,
    kilo,
    opencode,
    qwen,
)
from memory.agents.base import HookEvent, HookInputError, HookResult
from memory.briefing import context, gate
from memory.capture import ingest as capture
from memory.hooks.codex_rules import codex_dispatch
from memory.runtime.foreground import foreground
from memory.team.scope import ForeignSession

ADAPTERS: dict[str, ModuleType] = {
    "claude-code": claude_code,
    "codex": codex,
    "gemini": gemini,
    "copilot": copilot,
    "opencode": opencode,
    "qwen": qwen,
    "kilo": kilo,
    "droid": droid,
    "continue": continue_cli,  # events `cmem watch` reads from its session files
}


def adapter_for(platform: str) -> ModuleType:
    try:
        return ADAPTERS[platform]
    except KeyError:
        raise HookInputError(
            f"unknown platform {platform!r}; expected one of {', '.join(ADAPTERS)}"
        ) from None


def decode_body(body: bytes) -> dict[str, Any]:
    """Hook stdin as a dict. Invalid UTF-8 is replaced, not refused: losing one odd byte
    of a tool output beats losing the whole tool use."""
    text = body.decode("utf-8", errors="replace").strip()
    if not text:
        raise HookInputError("empty hook payload")
    try:
        data = json.loads(text, parse_constant=str, parse_float=_finite_float)
    except ValueError as exc:
        raise HookInputError(f"hook payload is not JSON: {exc}") from None
    except RecursionError:  # `[[[[…` 100,000 deep: hostile or broken, never a real payload
        raise HookInputError("hook payload is nested too deeply") from None
    if not isinstance(data, dict):
        raise HookInputError("hook payload must be a JSON object")
    if _ODD_ESCAPE.search(text):
        try:
            data = _storable(data)
        except RecursionError:
            raise HookInputError("hook payload is nested too deeply") from None
    return data


def _finite_float(text: str) -> float | str:
    """A JSON number as a float, or as its text when it does not fit one (`1e999`).

    Python's json reads `NaN`, `Infinity` and numbers beyond a double, which SQLite's
    JSON_VALID and PostgreSQL's jsonb refuse: such a payload would be lost at the insert.
    They are kept as text (`parse_constant=str` does the same for the bare constants)."""
    value = float(text)
    return value if math.isfinite(value) else text


# `\ud800` (a lone surrogate) cannot be encoded as UTF-8 and `\u0000` cannot be stored by
# PostgreSQL: both are replaced by U+FFFD anywhere in the payload (keys and ids included),
# only when the raw text holds such an escape, so ordinary payloads pay one regex scan.
_ODD_ESCAPE = re.compile(r"\\u(?:[dD][89a-fA-F][0-9a-fA-F]{2}|0000)")
_ODD_CHAR = re.compile("[\ud800-\udfff\x00]")


def _storable(value: Any) -> Any:
    if isinstance(value, str):
        return _ODD_CHAR.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_storable(str(k)): _storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_storable(v) for v in value]
    return value


def _dispatch(event: HookEvent) -> HookResult:
    if event.platform == codex.platform:
        # Codex-only events (SubagentStart, PostCompact) and Codex rules (shell reads,
        # compaction marks) first; the rest is the shared path below.
        answer = codex_dispatch(event=event)
        if answer is not None:
            return answer
    if event.event == "session-init":
        return capture.session_init(event=event)
    if event.event == "observation":
        return capture.observation_record(event=event)
    if event.event == "summarize":
        return capture.summary_request(event=event)
    if event.event == "session-end":
        return capture.session_end(event=event)
    if event.event == "context":
        return context.context_for_hook(event=event)
    if event.event == "file-context":
        return gate.gate_decide(event=event)
    raise HookInputError(f"unknown event {event.event!r}")


def hook_handle(*, platform: str, event: str, body: bytes, spooled: bool = False) -> dict[str, Any]:
    """Run one hook event and return the JSON the hook client prints. `spooled`: replayed
    from the spool, so it may have been stored once already (see memory.hooks.spool)."""
    adapter = adapter_for(platform)
    data = decode_body(body)
    hook_event = adapter.parse(event, data)
    if spooled:
        hook_event.raw["cmem_spooled"] = True
    try:
        # One settings load for the whole request, and whether it serves a remote client
        # decided once from it (the API's token middleware has decided already; a direct
        # caller, such as a spool replay, has not): file facts ask on every path.
        # Team mode: a remote hook client names the project (the worker cannot see its disk).
        # foreground(): background work (consumer, outline parse) waits while hooks are served.
        with (
            config.settings_snapshot(),
            projects.request_remote_scope(projects.remote_request()),
            projects.client_project_scope(data.get("cmem_project")),
            foreground(),
        ):
            return adapter.render(hook_event, _dispatch(hook_event))
    except RecursionError:
        # Parsed, but too deep for the recursive sanitizer (~1,000 levels): refuse it whole.
        raise HookInputError("hook payload is nested too deeply") from None
    except ForeignSession:
        # Team mode: the session id names another user's session. Nothing was stored (the
        # transaction rolled back) and the hook answers as for nothing known: no context,
        # no gate decision, so the attempt learns nothing about that session.
        return adapter.render(hook_event, HookResult())
