"""The token ledger: what cmem put into the model's context, what it spared it, what it spent.

net = avoided - shown - spent. A refused read counts the file's tokens as avoided; when the
model retries that read anyway, a GATE_RETRY row cancels them, so the refusal ends up as
pure overhead (its message was shown for nothing), and the refusal's `outcome` says
`read_again`. When the model answers a refusal with a memory tool instead (get_observations,
smart_outline, smart_unfold, get_tool_uses), that tool's answer is shown tokens (a MEMORY_TOOL row) and the
refusal's outcome names the tool. The observer's API tokens are spent.

Money: each kind at its own model's price. Observer rows carry the cost the
provider reported or the price table gave; every other row is main-model input, priced at
the session's model (read from the agent's transcript, Session.model) or, when unknown,
CLAUDE_MEM_SESSION_MODEL. Each token counts once at the uncached input price, on both sides
(an avoided read and an injected index alike), so the net is not flattered by resend costs
that both sides share.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

from django.utils import timezone

from memory import clock, config
from memory.ledger.prices import input_usd, price_row
from memory.models import LedgerEntry, Prompt, Session, estimate_tokens
from memory.runtime.compiled_sql import CompiledInsert
from memory.team import scope

MEMORY_TOOLS = ("get_observations", "smart_outline", "smart_unfold", "get_tool_uses")


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
    detail: str = "",
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
        detail=detail[:32],
    )


def ledger_insert(
    *,
    kind: str,
    session: Session,
    project: str,
    path: str = "",
    shown: str | int = 0,
    avoided: int = 0,
    detail: str = "",
) -> int:
    """ledger_record for the gate's hot path: the same row, one compiled INSERT (no model
    instance); returns its primary key."""
    return _LEDGER_INSERT.insert(
        session_id=session.pk,
        owner_id=session.owner_id,
        project=project,
        kind=kind,
        path=path,
        tokens_shown=estimate_tokens(shown) if isinstance(shown, str) else shown,
        tokens_avoided=avoided,
        detail=detail[:32],
    )


_LEDGER_INSERT = CompiledInsert(LedgerEntry)


def ledger_record_observer(*, session: Session | None, project: str, usage: Any) -> None:
    """Record one observer batch (its request and any repair): tokens spent (input + output +
    cache), the provider and model, the split, and the cost in USD. `usage` is an
    llm.Usage (duck-typed: recall does not import compression)."""
    _record_spend(
        kind=LedgerEntry.Kind.OBSERVER,
        session=session,
        owner_id=session.owner_id if session else None,
        project=project,
        usage=usage,
    )


def ledger_record_consolidation(*, project: str, usage: Any, owner_id: int | None = None) -> None:
    """Record one consolidation request (memory/curation/consolidation/): spent like the
    observer's, with its provider, model, split and cost; no session (a pass runs for a
    project, in the background). `owner_id`: whose rows it judged (team mode)."""
    _record_spend(
        kind=LedgerEntry.Kind.CONSOLIDATION,
        session=None,
        owner_id=owner_id,
        project=project,
        usage=usage,
    )


def _record_spend(
    *, kind: str, session: Session | None, owner_id: int | None, project: str, usage: Any
) -> None:
    if not usage.total:
        return
    LedgerEntry.objects.create(
        session=session,
        owner_id=owner_id,
        project=project,
        kind=kind,
        tokens_spent=usage.total,
        provider=usage.provider[:40],
        model=usage.model[:120],
        input_tokens=usage.input,
        cached_tokens=usage.cache_read + usage.cache_write,
        output_tokens=usage.output,
        cost_usd=usage.cost_usd,
    )


def ledger_record_retry(*, session: Session, project: str, path: str) -> LedgerEntry | None:
    """The model read a file the gate refused: cancel the refusal's avoided tokens, and note
    on the refusal that it was read again (the adaptive gate weighs that outcome)."""
    found = (
        LedgerEntry.objects.filter(session=session, path=path, kind=LedgerEntry.Kind.GATE_DENY)
        .order_by("-created", "-pk")
        .values_list("pk", "tokens_avoided")
        .first()
    )
    if not found:
        return None
    pk, refusal = found
    LedgerEntry.objects.filter(pk=pk).update(outcome=LedgerEntry.Outcome.READ_AGAIN)
    if not refusal:
        return None
    return ledger_record(
        kind=LedgerEntry.Kind.GATE_RETRY,
        session=session,
        project=project,
        path=path,
        avoided=-refusal,
    )


def memory_tool_bare(tool_name: str) -> str:
    """`get_observations` for `mcp__cmem__get_observations`, the plugin's
    `mcp__plugin_<p>_cmem__get_observations` or a bare name; "" for any other tool."""
    bare = tool_name.rsplit("__", 1)[-1]
    if bare not in MEMORY_TOOLS:
        return ""
    if bare == tool_name or tool_name.endswith(f"cmem__{bare}"):
        return bare
    return ""


def ledger_record_memory_tool(
    *, session: Session, project: str, tool: str, path: str = "", shown: str | int = 0
) -> LedgerEntry:
    """The agent called a memory tool in this session: book its answer as shown tokens, and
    mark the newest refusal still without an outcome (the same file first, for the tools
    that take one) as answered by this tool."""
    entry = ledger_record(
        kind=LedgerEntry.Kind.MEMORY_TOOL,
        session=session,
        project=project,
        path=path,
        shown=shown,
        detail=tool,
    )
    open_refusals = LedgerEntry.objects.filter(
        session=session, kind=LedgerEntry.Kind.GATE_DENY, outcome=LedgerEntry.Outcome.NOTHING
    ).order_by("-created", "-pk")
    target = None
    if path:
        target = open_refusals.filter(path=path).values_list("pk", flat=True).first()
    if target is None:
        target = open_refusals.values_list("pk", flat=True).first()
    if target is not None:
        LedgerEntry.objects.filter(pk=target).update(outcome=tool)
    return entry


def session_model(session: Session | None, settings: dict[str, str] | None = None) -> str:
    """The main model a session's tokens are priced at: its transcript's, else the default."""
    known = session.model if session is not None else ""
    return known or config.get("CLAUDE_MEM_SESSION_MODEL", settings) or "claude-opus-5-5"


@dataclass
class LedgerLine:
    """Tokens and money of one slice of the ledger. usd_* are the same kinds in dollars."""

    key: str
    label: str = ""
    shown: int = 0
    avoided: int = 0
    spent: int = 0
    denials: int = 0
    retries: int = 0
    injections: int = 0
    memory_tools: int = 0
    usd_shown: float = 0.0
    usd_avoided: float = 0.0
    usd_spent: float = 0.0

    @property
    def net(self) -> int:
        return self.avoided - self.shown - self.spent

    @property
    def usd_net(self) -> float:
        return self.usd_avoided - self.usd_shown - self.usd_spent

    def add(self, kind: str, shown: int, avoided: int, spent: int, money: Money) -> None:
        self.shown += shown
        self.avoided += avoided
        self.spent += spent
        self.usd_shown += money.shown
        self.usd_avoided += money.avoided
        self.usd_spent += money.spent
        if kind == LedgerEntry.Kind.GATE_DENY:
            self.denials += 1
        elif kind == LedgerEntry.Kind.GATE_RETRY:
            self.retries += 1
        elif kind == LedgerEntry.Kind.INJECTION:
            self.injections += 1
        elif kind == LedgerEntry.Kind.MEMORY_TOOL:
            self.memory_tools += 1

    def as_dict(self) -> dict[str, Any]:
        out = {**asdict(self), "net": self.net, "usd_net": round(self.usd_net, 6)}
        for name in ("usd_shown", "usd_avoided", "usd_spent"):
            out[name] = round(out[name], 6)
        return out


@dataclass(frozen=True)
class Money:
    """One ledger row in USD: main-model rows at the session model's input price, observer
    rows at what was recorded for them."""

    shown: float = 0.0
    avoided: float = 0.0
    spent: float = 0.0


# Rows whose money is what was recorded on them (a model request of cmem's own), not tokens
# priced at the session's main model.
SPENT_KINDS = (LedgerEntry.Kind.OBSERVER, LedgerEntry.Kind.CONSOLIDATION)


def row_money(*, kind: str, shown: int, avoided: int, cost_usd: float, model: str) -> Money:
    if kind in SPENT_KINDS:
        return Money(spent=cost_usd)
    return Money(shown=input_usd(model, shown), avoided=input_usd(model, avoided))


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
    # The main models the non-observer rows were priced at ({model: rows}), and the default
    # used for sessions whose transcript named none.
    models: dict[str, int] = field(default_factory=dict)
    default_model: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "days": self.days,
            "project": self.project,
            "models": self.models,
            "default_model": self.default_model,
            "priced": {m: price_row(m) is not None for m in self.models},
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
    default_model = session_model(None, settings)
    report = LedgerReport(days=days, project=project, default_model=default_model)
    per_day: dict[str, LedgerLine] = {}
    per_project: dict[str, LedgerLine] = {}
    per_session: dict[int, LedgerLine] = {}
    for kind, proj, session_pk, created, shown, avoided, spent, cost, model in rows.values_list(
        "kind",
        "project",
        "session_id",
        "created",
        "tokens_shown",
        "tokens_avoided",
        "tokens_spent",
        "cost_usd",
        "session__model",
    ).iterator():
        main = model or default_model
        if kind not in SPENT_KINDS:
            report.models[main] = report.models.get(main, 0) + 1
        money = row_money(kind=kind, shown=shown, avoided=avoided, cost_usd=cost, model=main)
        day = clock.to_local(created, zone).date().isoformat()
        lines = [
            report.total,
            per_day.setdefault(day, LedgerLine(key=day)),
            per_project.setdefault(proj, LedgerLine(key=proj)),
        ]
        if session_pk is not None:
            lines.append(per_session.setdefault(session_pk, LedgerLine(key=str(session_pk))))
        for line in lines:
            line.add(kind, shown, avoided, spent, money)
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
        line = out.setdefault(
            (provider, model),
            ObserverUsage(provider or "unknown provider", model or "unknown model"),
        )
        line.batches += 1
        line.input += inp
        line.cached += cached
        line.output += output
        line.cost_usd += cost
    return sorted(out.values(), key=lambda u: -u.cost_usd)
