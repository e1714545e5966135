"""The adaptive read gate (CLAUDE_MEM_READ_GATE=adaptive, the default): refuse while refusals
pay off in this project, advise instead of refusing once they do not.

The ledger holds the outcome of every refusal (LedgerEntry.outcome): `read_again` when the
model read the refused file again in that session (also a GATE_RETRY row), the memory tool
it used instead (get_observations, smart_outline, smart_unfold: a MEMORY_TOOL row with the
tool's answer), or nothing (the timeline was enough). The rule, per project:

- window: the project's latest CLAUDE_MEM_READ_GATE_WINDOW refusals (default 8) of the last
  WINDOW_DAYS days;
- a refusal not read again saved the file's tokens minus the refusal's text and minus the
  memory tool's answer when one was used instead;
- a refusal read again cost its text plus one more turn that resends the conversation
  (CLAUDE_MEM_READ_GATE_TURN_TOKENS, default 6000);
- with at least MIN_EVIDENCE refusals in the window and cost > saved, the gate switches to
  allow-with-timeline (`context`); otherwise it refuses (`deny`), as claude-mem's gate does
  (docs/reference/source-rules.md).
- while in `context`, every PROBE_EVERY-th gated read is refused again (a probe), so new
  evidence arrives; when the MIN_EVIDENCE latest refusals were all answered another way than
  reading again, the gate refuses again even before the whole window tips. Old refusals
  also age out after WINDOW_DAYS.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import CharField, QuerySet, Value
from django.utils import timezone

from memory import config
from memory.models import LedgerEntry
from memory.runtime.compiled_sql import CompiledQuery, db_datetime
from memory.team import scope

WINDOW_DAYS = 14
MIN_EVIDENCE = 2
PROBE_EVERY = 10


@dataclass(frozen=True)
class GateMode:
    """Which way the adaptive gate leans in one project, and the evidence."""

    mode: str  # deny | context
    why: str
    refusals: int = 0
    read_again: int = 0
    saved: int = 0
    cost: int = 0
    probe: bool = False

    def as_dict(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "why": self.why,
            "refusals": self.refusals,
            "read_again": self.read_again,
            "saved": self.saved,
            "cost": self.cost,
        }


def adaptive_mode(*, project: str, settings: dict[str, str] | None = None) -> GateMode:
    """The adaptive gate's mode for `project` now (two indexed reads of the ledger)."""
    window = max(config.read_gate_window(settings), 1)
    turn = max(config.read_gate_turn_tokens(settings), 0)
    since = timezone.now() - timedelta(days=WINDOW_DAYS)
    refusals = _refusals(project=project, since=since, window=window)
    if len(refusals) < MIN_EVIDENCE:
        return GateMode(
            "deny",
            f"refusing: {len(refusals)} {'refusal' if len(refusals) == 1 else 'refusals'} in "
            f"the last {WINDOW_DAYS} days, too few to judge whether refusing pays (it needs "
            f"{MIN_EVIDENCE})",
            refusals=len(refusals),
        )
    return judge(refusals, _later_rows(project=project, since=refusals[-1].created), turn)


# The adaptive rule's four answers, shared by every intervention that adapts this way (the
# read gate's refusals; failure recall, memory/briefing/failure_recall.py).
PAYS = "pays"  # it saved more than it cost over the window: keep doing it
RECOVERED = "recovered"  # it did not, but its MIN_EVIDENCE latest were not missed: again
PROBE = "probe"  # held back PROBE_EVERY - 1 times since the latest: do it once, for evidence
HOLD = "hold"  # hold back


def verdict(*, cost: int, saved: int, missed: list[bool], held: int) -> str:
    """The adaptive rule over one window: `missed` says, newest first, which interventions
    did not pay (a refusal read again; a recall followed by the same error), `held` how many
    times it was held back since the newest. Callers check MIN_EVIDENCE first."""
    if cost <= saved:
        return PAYS
    if not any(missed[:MIN_EVIDENCE]):
        return RECOVERED
    return PROBE if held + 1 >= PROBE_EVERY else HOLD


@dataclass(frozen=True)
class Refusal:
    session: int | None
    path: str
    created: datetime
    shown: int
    avoided: int
    outcome: str


@dataclass(frozen=True)
class LaterRow:
    """A retry, memory tool answer or advised read since the oldest refusal of the window."""

    kind: str
    session: int | None
    path: str
    created: datetime
    detail: str
    shown: int


def judge(refusals: list[Refusal], later: list[LaterRow], turn: int) -> GateMode:
    """The rule (module docstring) over the window's refusals, newest first, and the rows
    since the oldest of them."""
    retries = [row for row in later if row.kind == LedgerEntry.Kind.GATE_RETRY]
    answers = [row for row in later if row.kind == LedgerEntry.Kind.MEMORY_TOOL]
    saved = cost = read_again = 0
    tools: dict[str, int] = {}
    outcomes: list[bool] = []  # newest first: was that refusal read again?
    for refusal in refusals:
        # Rows from before outcomes were recorded still count through their GATE_RETRY.
        again = refusal.outcome == LedgerEntry.Outcome.READ_AGAIN or any(
            r.session == refusal.session and r.path == refusal.path and r.created >= refusal.created
            for r in retries
        )
        outcomes.append(again)
        if again:
            read_again += 1
            cost += refusal.shown + turn
            continue
        answer = 0
        if refusal.outcome:
            tools[refusal.outcome] = tools.get(refusal.outcome, 0) + 1
            answer = next(
                (
                    a.shown
                    for a in answers
                    if a.session == refusal.session
                    and a.detail == refusal.outcome
                    and a.created >= refusal.created
                    and a.path in ("", refusal.path)
                ),
                0,
            )
        saved += max(refusal.avoided - refusal.shown - answer, 0)
    answered = sum(tools.values())
    other = len(refusals) - read_again - answered
    used = ", ".join(f"{name} {n}" for name, n in sorted(tools.items()))
    evidence = (
        f"{read_again} of the last {len(refusals)} refusals were read again, "
        f"{answered} answered with a memory tool{f' ({used})' if used else ''}, "
        f"{other} with nothing more (cost ~{cost} tokens, saved ~{saved})"
    )
    newest = refusals[0].created
    advised = sum(
        1 for row in later if row.kind == LedgerEntry.Kind.GATE_CONTEXT and row.created > newest
    )
    found = verdict(cost=cost, saved=saved, missed=outcomes, held=advised)
    if found == PAYS:
        return GateMode("deny", f"refusing: {evidence}", len(refusals), read_again, saved, cost)
    if found == RECOVERED:
        return GateMode(
            "deny",
            f"refusing again: the {MIN_EVIDENCE} latest refusals were not read again, "
            f"although {evidence}",
            len(refusals),
            read_again,
            saved,
            cost,
        )
    probe = found == PROBE
    return GateMode(
        "deny" if probe else "context",
        f"advising instead of refusing: {evidence}"
        + ("; this read is a probe refusal" if probe else ""),
        len(refusals),
        read_again,
        saved,
        cost,
        probe,
    )


# The two ledger reads, built by the ORM once and run on a plain cursor (memory/runtime/compiled_sql.py): on
# the gate's hot path the four QuerySets they replace cost 43% of a decision.
REFUSAL_FIELDS = ("session_id", "path", "created", "tokens_shown", "tokens_avoided", "outcome")
LATER_FIELDS = ("kind", "session_id", "path", "created", "detail", "tokens_shown")


def _refusals_rows(p: Mapping[str, Any], window: int) -> QuerySet[Any]:
    # A teammate's gate weighs their own refusals only (memory/team/scope.py): narrowed
    # before the LIMIT; an unrestricted read is compiled once and run raw.
    ledger = LedgerEntry.objects.filter(
        project=p["project"], created__gte=_since(p), kind=p["kind"]
    )
    return (
        scope.owned(ledger, "owner")
        .order_by("-created", "-pk")
        .values_list(*REFUSAL_FIELDS)[:window]
    )


def _later_query(p: Mapping[str, Any]) -> QuerySet[Any]:
    return (
        scope.owned(LedgerEntry.objects.all(), "owner")
        .filter(
            project=p["project"],
            created__gte=_since(p),
            kind__in=[p["retry"], p["tool"], p["context"]],
        )
        # Oldest first: a refusal is matched with the first answer after it.
        .order_by("created", "pk")
        .values_list(*LATER_FIELDS)
    )


def _since(p: Mapping[str, Any]) -> Any:
    """The window's start: a datetime, or the compiled query's placeholder passed through
    as a plain parameter (a DateTimeField would try to parse it)."""
    since = p["since"]
    return since if isinstance(since, datetime) else Value(since, output_field=CharField())


_REFUSALS: dict[int, CompiledQuery] = {}
_LATER = CompiledQuery(_later_query, "project", "since", "retry", "tool", "context")


def _rows(query: QuerySet[Any] | CompiledQuery, **values: Any) -> list[tuple[Any, ...]]:
    """Rows of `query`: a QuerySet (a teammate's token: already narrowed to their own rows)
    or a compiled query run raw with `values`."""
    if not isinstance(query, CompiledQuery):
        return list(query)
    return query.rows(**values)


def _refusals(*, project: str, since: datetime, window: int) -> list[Refusal]:
    values = {"project": project, "since": since, "kind": LedgerEntry.Kind.GATE_DENY}
    query: QuerySet[Any] | CompiledQuery
    if scope.restricted_owner() is not None:
        query = _refusals_rows(values, window)
    else:
        query = _REFUSALS.get(window) or _REFUSALS.setdefault(
            window,
            CompiledQuery(lambda p: _refusals_rows(p, window), "project", "since", "kind"),
        )
        values["since"] = connection.ops.adapt_datetimefield_value(since)
    return [
        Refusal(session, path, db_datetime(created), shown, avoided, outcome)
        for session, path, created, shown, avoided, outcome in _rows(query, **values)
    ]


def _later_rows(*, project: str, since: datetime) -> list[LaterRow]:
    values: dict[str, Any] = {
        "project": project,
        "since": since,
        "retry": LedgerEntry.Kind.GATE_RETRY,
        "tool": LedgerEntry.Kind.MEMORY_TOOL,
        "context": LedgerEntry.Kind.GATE_CONTEXT,
    }
    query: QuerySet[Any] | CompiledQuery
    if scope.restricted_owner() is not None:
        query = _later_query(values)
    else:
        query = _LATER
        values["since"] = connection.ops.adapt_datetimefield_value(since)
    return [
        LaterRow(kind, session, path, db_datetime(created), detail, shown)
        for kind, session, path, created, detail, shown in _rows(query, **values)
    ]


def project_gate_mode(*, project: str, settings: dict[str, str] | None = None) -> GateMode:
    """The read gate's mode for `project` as configured now, with the reason, for Stats."""
    configured = config.read_gate(settings)
    if configured == "adaptive":
        return adaptive_mode(project=project, settings=settings)
    if configured in {"deny", "context"}:
        return GateMode(configured, f"set to {configured} in Settings (Read gate)")
    return GateMode("off", f"set to {configured or 'off'} in Settings (Read gate)")


# What each mode does, in the words of the session and stats pages (the `why` stays the
# rule's own evidence, for the API and a details line).
MODE_WORDS = {
    "deny": "refuses full re-reads of files it already knows and hands the agent its notes",
    "context": "lets re-reads through with a short note of what it already knows",
    "off": "is off: every read goes through",
}


def gate_mode_words(mode: str) -> str:
    return MODE_WORDS.get(mode, mode)
