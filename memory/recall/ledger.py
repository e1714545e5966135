"""The token ledger: what cmem put into the model's context, what it spared it, what it spent.

net = avoided - shown - spent. A refused read counts the file's tokens as avoided; when the
model retries that read anyway, a GATE_RETRY row cancels them, so the refusal ends up as
pure overhead (its message was shown for nothing). The observer's API tokens are spent.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

from django.utils import timezone

from memory import clock
from memory.models import LedgerEntry, Prompt, Session, estimate_tokens
from memory.team import scope


def file_tokens(size: int) -> int:
    """What reading a file of `size` bytes costs, roughly (4 bytes a token, like estimate_tokens)."""
    return max(0, size) // 4


def ledger_record(
    *,
    kind: str,
    session: Session | None,
    project: str,
    path: str = "",
    shown: str | int = 0,
    avoided: int = 0,
    spent: int = 0,
) -> LedgerEntry:
    """One ledger line; `shown` may be the text itself (its tokens are estimated)."""
    tokens_shown = estimate_tokens(shown) if isinstance(shown, str) else shown
    return LedgerEntry.objects.create(
        session=session,
        owner_id=session.owner_id if session else scope.writer_id(),
        project=project,
        kind=kind,
        path=path,
        tokens_shown=tokens_shown,
        tokens_avoided=avoided,
        tokens_spent=spent,
    )


def ledger_record_observer(*, session: Session | None, project: str, usage: Any) -> None:
    """Record one observer batch (its request and any repair): tokens spent (input + output +
    cache), the provider and model, the split, and the cost in USD. `usage` is an
    llm.Usage (duck-typed: recall does not import compression)."""
    if not usage.total:
        return
    LedgerEntry.objects.create(
        session=session,
        owner_id=session.owner_id if session else None,
        project=project,
        kind=LedgerEntry.Kind.OBSERVER,
        tokens_spent=usage.total,
        provider=usage.provider[:40],
        model=usage.model[:120],
        input_tokens=usage.input,
        cached_tokens=usage.cache_read + usage.cache_write,
        output_tokens=usage.output,
        cost_usd=usage.cost_usd,
    )


def ledger_record_retry(*, session: Session, project: str, path: str) -> LedgerEntry | None:
    """The model read a file the gate refused: cancel the refusal's avoided tokens."""
    refusal = (
        LedgerEntry.objects.filter(session=session, path=path, kind=LedgerEntry.Kind.GATE_DENY)
        .order_by("-created", "-pk")
        .values_list("tokens_avoided", flat=True)
        .first()
    )
    if not refusal:
        return None
    return ledger_record(
        kind=LedgerEntry.Kind.GATE_RETRY,
        session=session,
        project=project,
        path=path,
        avoided=-refusal,
    )


@dataclass
class LedgerLine:
    key: str
    label: str = ""
    shown: int = 0
    avoided: int = 0
    spent: int = 0
    denials: int = 0
    retries: int = 0
    injections: int = 0

    @property
    def net(self) -> int:
        return self.avoided - self.shown - self.spent

    def add(self, kind: str, shown: int, avoided: int, spent: int) -> None:
        self.shown += shown
        self.avoided += avoided
        self.spent += spent
        if kind == LedgerEntry.Kind.GATE_DENY:
            self.denials += 1
        elif kind == LedgerEntry.Kind.GATE_RETRY:
            self.retries += 1
        elif kind == LedgerEntry.Kind.INJECTION:
            self.injections += 1

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "net": self.net}


@dataclass
class ObserverUsage:
    """The observer's spend of one provider and model over the report's window."""

    provider: str
    model: str
    batches: int = 0
    input: int = 0
    cached: int = 0
    output: int = 0
    cost_usd: float = 0.0


@dataclass
class LedgerReport:
    days: int
    project: str | None
    total: LedgerLine = field(default_factory=lambda: LedgerLine(key="total"))
    by_day: list[LedgerLine] = field(default_factory=list)
    by_project: list[LedgerLine] = field(default_factory=list)
    by_session: list[LedgerLine] = field(default_factory=list)
    observer: list[ObserverUsage] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "days": self.days,
            "project": self.project,
            "total": self.total.as_dict(),
            "by_day": [line.as_dict() for line in self.by_day],
            "by_project": [line.as_dict() for line in self.by_project],
            "by_session": [line.as_dict() for line in self.by_session],
            "observer": [{**asdict(u), "cost_usd": round(u.cost_usd, 6)} for u in self.observer],
        }


def ledger_report(
    *, project: str | None = None, days: int = 30, settings: dict[str, str] | None = None
) -> LedgerReport:
    """Net savings per day (local zone), project and session over the last `days` days.

    Grouped in Python: the window is small (one row per gate decision, injection or
    compression batch) and local-day grouping must follow the same zone as the index.
    """
    rows = scope.owned(
        LedgerEntry.objects.filter(created__gte=timezone.now() - timedelta(days=max(days, 1))),
        "owner",
    )
    if project:
        rows = rows.filter(project=project)
    zone = clock.local_zone(settings)
    report = LedgerReport(days=days, project=project)
    per_day: dict[str, LedgerLine] = {}
    per_project: dict[str, LedgerLine] = {}
    per_session: dict[int, LedgerLine] = {}
    for kind, proj, session_pk, created, shown, avoided, spent in rows.values_list(
        "kind", "project", "session_id", "created", "tokens_shown", "tokens_avoided", "tokens_spent"
    ).iterator():
        day = clock.to_local(created, zone).date().isoformat()
        lines = [
            report.total,
            per_day.setdefault(day, LedgerLine(key=day)),
            per_project.setdefault(proj, LedgerLine(key=proj)),
        ]
        if session_pk is not None:
            lines.append(per_session.setdefault(session_pk, LedgerLine(key=str(session_pk))))
        for line in lines:
            line.add(kind, shown, avoided, spent)
    # A session is named by its first prompt (what the user asked), not a truncated id.
    firsts = dict(
        Prompt.objects.filter(session_id__in=list(per_session), number=1).values_list(
            "session_id", "text"
        )
    )
    labels = {
        pk: f"{proj} · {_prompt_label(firsts[pk])}" if firsts.get(pk) else f"{proj} {sid[:8]}"
        for pk, proj, sid in Session.objects.filter(pk__in=list(per_session)).values_list(
            "pk", "project", "session_id"
        )
    }
    for pk, line in per_session.items():
        line.label = labels.get(pk, "")
    report.observer = _observer_usage(rows)
    report.by_day = [per_day[key] for key in sorted(per_day)]
    report.by_project = sorted(per_project.values(), key=lambda line: -line.net)
    report.by_session = sorted(per_session.values(), key=lambda line: -line.net)
    return report


def _prompt_label(text: str, limit: int = 60) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _observer_usage(rows: Any) -> list[ObserverUsage]:
    out: dict[tuple[str, str], ObserverUsage] = {}
    for provider, model, inp, cached, output, cost in rows.filter(
        kind=LedgerEntry.Kind.OBSERVER
    ).values_list(
        "provider", "model", "input_tokens", "cached_tokens", "output_tokens", "cost_usd"
    ):
        line = out.setdefault((provider, model), ObserverUsage(provider or "?", model or "?"))
        line.batches += 1
        line.input += inp
        line.cached += cached
        line.output += output
        line.cost_usd += cost
    return sorted(out.values(), key=lambda u: -u.cost_usd)
