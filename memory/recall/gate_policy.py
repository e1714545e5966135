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
  allow-with-timeline (`context`); otherwise it refuses (`deny`), as seed 000 describes.
- while in `context`, every PROBE_EVERY-th gated read is refused again (a probe), so new
  evidence arrives; when the MIN_EVIDENCE latest refusals were all answered another way than
  reading again, the gate refuses again even before the whole window tips. Old refusals
  also age out after WINDOW_DAYS.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.utils import timezone

from memory import config
from memory.models import LedgerEntry
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
    window = max(config.get_int("CLAUDE_MEM_READ_GATE_WINDOW", settings), 1)
    turn = max(config.get_int("CLAUDE_MEM_READ_GATE_TURN_TOKENS", settings), 0)
    since = timezone.now() - timedelta(days=WINDOW_DAYS)
    # A teammate's gate weighs their own refusals only (memory/team/scope.py).
    ledger = scope.owned(LedgerEntry.objects.filter(project=project, created__gte=since), "owner")
    refusals = list(
        ledger.filter(kind=LedgerEntry.Kind.GATE_DENY)
        .order_by("-created", "-pk")
        .values_list("session_id", "path", "created", "tokens_shown", "tokens_avoided", "outcome")[
            :window
        ]
    )
    if len(refusals) < MIN_EVIDENCE:
        return GateMode(
            "deny",
            f"refusing: {len(refusals)} refusal(s) in the last {WINDOW_DAYS} days, "
            f"too few to judge (needs {MIN_EVIDENCE})",
            refusals=len(refusals),
        )
    oldest = refusals[-1][2]
    retries = list(
        ledger.filter(kind=LedgerEntry.Kind.GATE_RETRY, created__gte=oldest).values_list(
            "session_id", "path", "created"
        )
    )
    answers = list(
        ledger.filter(kind=LedgerEntry.Kind.MEMORY_TOOL, created__gte=oldest)
        .order_by("created", "pk")
        .values_list("session_id", "path", "created", "detail", "tokens_shown")
    )
    saved = cost = read_again = 0
    tools: dict[str, int] = {}
    outcomes: list[bool] = []  # newest first: was that refusal read again?
    for session_pk, path, created, shown, avoided, outcome in refusals:
        # Rows from before outcomes were recorded still count through their GATE_RETRY.
        again = outcome == LedgerEntry.Outcome.READ_AGAIN or any(
            s == session_pk and p == path and c >= created for s, p, c in retries
        )
        outcomes.append(again)
        if again:
            read_again += 1
            cost += shown + turn
            continue
        answer = 0
        if outcome:
            tools[outcome] = tools.get(outcome, 0) + 1
            answer = next(
                (
                    t
                    for s, p, c, tool, t in answers
                    if s == session_pk and tool == outcome and c >= created and p in ("", path)
                ),
                0,
            )
        saved += max(avoided - shown - answer, 0)
    answered = sum(tools.values())
    other = len(refusals) - read_again - answered
    used = ", ".join(f"{name} {n}" for name, n in sorted(tools.items()))
    evidence = (
        f"{read_again} of the last {len(refusals)} refusals were read again, "
        f"{answered} answered with a memory tool{f' ({used})' if used else ''}, "
        f"{other} with nothing more (cost ~{cost} tokens, saved ~{saved})"
    )
    if cost <= saved:
        return GateMode("deny", f"refusing: {evidence}", len(refusals), read_again, saved, cost)
    if not any(outcomes[:MIN_EVIDENCE]):
        return GateMode(
            "deny",
            f"refusing again: the {MIN_EVIDENCE} latest refusals were not read again, "
            f"although {evidence}",
            len(refusals),
            read_again,
            saved,
            cost,
        )
    newest = refusals[0][2]
    advised = ledger.filter(kind=LedgerEntry.Kind.GATE_CONTEXT, created__gt=newest).count()
    probe = advised + 1 >= PROBE_EVERY
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


def project_gate_mode(*, project: str, settings: dict[str, str] | None = None) -> GateMode:
    """The read gate's mode for `project` as configured now, with the reason, for Stats."""
    configured = config.get("CLAUDE_MEM_READ_GATE", settings).strip().lower()
    if configured == "adaptive":
        return adaptive_mode(project=project, settings=settings)
    if configured in {"deny", "context"}:
        return GateMode(configured, f"set by CLAUDE_MEM_READ_GATE={configured}")
    return GateMode("off", f"set by CLAUDE_MEM_READ_GATE={configured or 'off'}")
