"""Typed readers of the settings read on hot paths. Every hook request, gate decision and
prompt reads `config.read_gate(settings)` instead of a string key, so a misspelt key fails at
import and each reader's kind is the registry's.

Each takes the request's `config.load()` when the caller has it (one load a request), else
loads. Words are answered stripped and lower-cased; numbers clamped to their bounds.
"""

from __future__ import annotations

from memory.config.registry import BY_KEY
from memory.config.values import get, get_bool, get_int, get_list

TYPE_CHECKING = False  # not typing's: see memory/config/registry.py
if TYPE_CHECKING:
    from typing import Protocol, TypeVar

    from memory.config.setting import Kind

    T_co = TypeVar("T_co", covariant=True)

    class Reader(Protocol[T_co]):
        """A typed reader: `reader()` loads, `reader(settings)` reads the request's settings."""

        def __call__(self, settings: Values = None, /) -> T_co: ...


Values = dict[str, str] | None


def _checked(key: str, *kinds: Kind) -> str:
    record = BY_KEY[key]  # KeyError: not a registered setting
    if record.internal or record.kind not in kinds:
        raise TypeError(f"{key} is a {record.kind} setting, not {' or '.join(kinds)}")
    return key


def _word(key: str) -> Reader[str]:
    _checked(key, "str", "choice")

    def read(settings: Values = None) -> str:
        return get(key, settings).strip().lower()

    return read


def _text(key: str) -> Reader[str]:
    _checked(key, "str", "choice")

    def read(settings: Values = None) -> str:
        return get(key, settings)

    return read


def _int(key: str) -> Reader[int]:
    _checked(key, "int")

    def read(settings: Values = None) -> int:
        return get_int(key, settings)

    return read


def _bool(key: str) -> Reader[bool]:
    _checked(key, "bool")

    def read(settings: Values = None) -> bool:
        return get_bool(key, settings)

    return read


def _list(key: str) -> Reader[list[str]]:
    _checked(key, "list")

    def read(settings: Values = None) -> list[str]:
        return get_list(key, settings)

    return read


# The read gate (memory/briefing/gate.py, gate_policy.py; memory/hooks/codex_rules.py).
read_gate = _word("CLAUDE_MEM_READ_GATE")
read_gate_min_bytes = _int("CLAUDE_MEM_READ_GATE_MIN_BYTES")
read_gate_limit = _int("CLAUDE_MEM_READ_GATE_LIMIT")
read_gate_window = _int("CLAUDE_MEM_READ_GATE_WINDOW")
read_gate_turn_tokens = _int("CLAUDE_MEM_READ_GATE_TURN_TOKENS")
codex_shell_read_gate = _word("CLAUDE_MEM_CODEX_SHELL_READ_GATE")
# Capture (memory/capture/ingest.py, privacy.py) and the project it lands in (memory/projects.py).
skip_tools = _list("CLAUDE_MEM_SKIP_TOOLS")
redact_secrets = _bool("CLAUDE_MEM_REDACT_SECRETS")
field_cap = _int("CLAUDE_MEM_FIELD_CAP")
excluded_projects = _list("CLAUDE_MEM_EXCLUDED_PROJECTS")
project_identity = _word("CLAUDE_MEM_PROJECT_IDENTITY")
# Who may call the API (memory/team/auth.py, memory/projects.py, memory/api/retrieval.py).
worker_host = _text("CLAUDE_MEM_WORKER_HOST")
require_token = _bool("CLAUDE_MEM_REQUIRE_TOKEN")
database_url = _text("CLAUDE_MEM_DATABASE_URL")
# What the agent is shown (memory/briefing/context.py, prompt_recall.py; memory/clock.py).
context_observations = _int("CLAUDE_MEM_CONTEXT_OBSERVATIONS")
context_session_count = _int("CLAUDE_MEM_CONTEXT_SESSION_COUNT")
context_tokens = _int("CLAUDE_MEM_CONTEXT_TOKENS")
context_pinned_tokens = _int("CLAUDE_MEM_CONTEXT_PINNED_TOKENS")
consolidate_mode = _word("CLAUDE_MEM_CONSOLIDATE")
consolidate_every_hours = _int("CLAUDE_MEM_CONSOLIDATE_EVERY_HOURS")
consolidate_max_tokens = _int("CLAUDE_MEM_CONSOLIDATE_MAX_TOKENS")
demote_after_weeks = _int("CLAUDE_MEM_DEMOTE_AFTER_WEEKS")
semantic_inject = _bool("CLAUDE_MEM_SEMANTIC_INJECT")
semantic_inject_limit = _int("CLAUDE_MEM_SEMANTIC_INJECT_LIMIT")
# Failure recall (memory/briefing/failure_recall.py).
failure_recall = _word("CLAUDE_MEM_FAILURE_RECALL")
time_zone = _text("CLAUDE_MEM_TIME_ZONE")
# Deliverables handed over at Stop (deliverables/handover.py, deliverables/services.py).
deliverables_enabled = _bool("CLAUDE_MEM_DELIVERABLES_ENABLED")
deliverables_max_bytes = _int("CLAUDE_MEM_DELIVERABLES_MAX_BYTES")
