"""Observer health and the daily token budget, kept in `<data dir>/observer-health.json`.

A small file rather than a table: it is written after every API call (success or failure)
by the consumer and read on every SessionStart, and it must count usage that produced no
row at all (an empty answer is still paid for). Writes take a file lock, so the consumer's
threads and processes never lose an update.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from memory import config
from memory.compression.providers import AUTO, OFFLINE, provider_choice, requested
from memory.runtime import locks

FAILURES_BEFORE_DEGRADED = 3
# Once degraded, batches go offline for this long before one batch tries the API again: an
# outage must not make every batch sit through the whole retry backoff.
PAUSE_SECONDS = 60.0
RATE_LIMIT_PAUSE_SECONDS = 300.0
_lock = threading.Lock()


def _path() -> Path:
    return config.data_dir() / "observer-health.json"


def _today() -> str:
    return date.today().isoformat()


def _read() -> dict[str, Any]:
    try:
        data = json.loads(_path().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@contextmanager
def _state() -> Iterator[dict[str, Any]]:
    path = _path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with _lock, locks.exclusive(path.with_suffix(".lock")):
        state = _read()
        yield state
        config.write_atomic(path, json.dumps(state, indent=1).encode())


def observer_record_success(*, tokens: int) -> None:
    with _state() as state:
        state["consecutive_failures"] = 0
        state.pop("rate_limited_at", None)
        state["last_success"] = datetime.now(UTC).isoformat(timespec="seconds")
        _add_usage(state, tokens)


def observer_record_failure(*, error: str, tokens: int = 0, rate_limited: bool = False) -> None:
    """`error` must already be scrubbed (llm.scrub); it is shown in the SessionStart header.
    A rate limit pauses the provider for RATE_LIMIT_PAUSE_SECONDS at once: retrying into it
    only spends the user's shared quota."""
    with _state() as state:
        if rate_limited:
            state["rate_limited_at"] = time.time()
            state["rate_limit_error"] = error[:300]
        if not state.get("consecutive_failures"):
            state["failing_since"] = datetime.now(UTC).isoformat(timespec="seconds")
        state["consecutive_failures"] = int(state.get("consecutive_failures", 0)) + 1
        state["last_error"] = error[:300]
        state["last_failure"] = time.time()
        _add_usage(state, tokens)


def observer_record_usage(*, tokens: int) -> None:
    with _state() as state:
        _add_usage(state, tokens)


def _add_usage(state: dict[str, Any], tokens: int) -> None:
    if state.get("usage_day") != _today():
        state["usage_day"] = _today()
        state["usage_tokens"] = 0
    state["usage_tokens"] = int(state.get("usage_tokens", 0)) + max(0, tokens)


def api_paused() -> bool:
    """Degraded, and the last failure is recent: skip the API for now (see PAUSE_SECONDS)."""
    state = _read()
    if _rate_limited(state):
        return True
    if int(state.get("consecutive_failures", 0)) < FAILURES_BEFORE_DEGRADED:
        return False
    return time.time() - float(state.get("last_failure", 0)) < PAUSE_SECONDS


def _rate_limited(state: dict[str, Any]) -> bool:
    return time.time() - float(state.get("rate_limited_at", 0) or 0) < RATE_LIMIT_PAUSE_SECONDS


def tokens_used_today() -> int:
    state = _read()
    return int(state.get("usage_tokens", 0)) if state.get("usage_day") == _today() else 0


def budget_spent() -> bool:
    budget = config.get_int("CLAUDE_MEM_DAILY_TOKEN_BUDGET")
    return budget > 0 and tokens_used_today() >= budget


def observer_status() -> dict[str, Any]:
    """For the dashboard: failures, last error, today's usage against the budget."""
    state = _read()
    return {
        "consecutive_failures": int(state.get("consecutive_failures", 0)),
        "failing_since": state.get("failing_since", ""),
        "last_error": state.get("last_error", ""),
        "last_success": state.get("last_success", ""),
        "tokens_today": tokens_used_today(),
        "daily_budget": config.get_int("CLAUDE_MEM_DAILY_TOKEN_BUDGET"),
        "budget_spent": budget_spent(),
        "degraded": int(state.get("consecutive_failures", 0)) >= FAILURES_BEFORE_DEGRADED,
        "api_paused": api_paused(),
        "rate_limited": _rate_limited(state),
    }


def observer_health_line(*, project: str | None = None) -> str:
    """'' when healthy; else one line saying memory is degraded and why (no secrets).

    Health is global (one observer serves every project); `project` is accepted so callers
    need not care."""
    state = _read()
    failures = int(state.get("consecutive_failures", 0))
    if failures >= FAILURES_BEFORE_DEGRADED:
        since = str(state.get("failing_since", ""))[:16].replace("T", " ")
        error = " ".join(str(state.get("last_error", "unknown error")).split())
        return (
            f"⚠ cmem memory is degraded: the last {failures} compression requests failed"
            f"{f' (since {since} UTC)' if since else ''}: {error}. Observations are being written "
            "by the offline compressor; tell the user at the start of your reply."
        )
    if _rate_limited(state):
        error = " ".join(str(state.get("rate_limit_error", "rate-limited")).split())
        return (
            f"⚠ cmem memory is degraded: the observer is rate-limited ({error}); the offline "
            "compressor writes observations for a few minutes."
        )

    # Only a provider asked for by name can be "missing"; `auto` never runs the (slow)
    # `claude auth status` probe on the SessionStart path.
    asked = requested()[0]
    choice = provider_choice() if asked not in {AUTO, OFFLINE} else None
    if choice is not None and choice.name == OFFLINE:
        # A provider was asked for and cannot serve (no key, CLI not logged in).
        return (
            f"⚠ cmem memory is degraded: {choice.why}; the offline compressor writes observations."
        )
    if budget_spent():
        budget = config.get_int("CLAUDE_MEM_DAILY_TOKEN_BUDGET")
        return (
            f"⚠ cmem memory is degraded: today's observer token budget ({budget:,} tokens, "
            "CLAUDE_MEM_DAILY_TOKEN_BUDGET) is spent; the offline compressor writes observations until tomorrow."
        )
    return ""
