"""The stats page's charts: observations and the token ledger per day, as bar geometry
for inline SVG (computed here so the template only draws rectangles)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from django.db.models import Count, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from memory.models import LedgerEntry, Observation


@dataclass
class Bar:
    day: date
    value: int
    x: float
    y: float
    width: float
    height: float


@dataclass
class Chart:
    title: str
    unit: str
    bars: list[Bar]
    total: int
    peak: int
    width: int = 720
    height: int = 160

    @property
    def first_day(self) -> date | None:
        return self.bars[0].day if self.bars else None

    @property
    def last_day(self) -> date | None:
        return self.bars[-1].day if self.bars else None


def _chart(title: str, unit: str, per_day: dict[date, int], days: list[date]) -> Chart:
    """Bar geometry for an inline SVG: computed here so the template only draws rectangles."""
    width, height, top = 720, 160, 12
    values = [int(per_day.get(d, 0)) for d in days]
    peak = max(values) if values else 0
    step = width / max(len(days), 1)
    bars = []
    for i, (d, v) in enumerate(zip(days, values, strict=True)):
        h = (height - top) * v / peak if peak else 0
        bars.append(
            Bar(
                day=d,
                value=v,
                x=round(i * step + 1, 2),
                y=round(height - h, 2),
                width=round(max(step - 2, 1), 2),
                height=round(h, 2),
            )
        )
    return Chart(
        title=title, unit=unit, bars=bars, total=sum(values), peak=peak, width=width, height=height
    )


@dataclass
class Stats:
    days: int
    charts: list[Chart]
    totals: dict[str, int]


def stats_charts(*, days: int = 30, project: str = "") -> Stats:
    """Observations per day and the token ledger per day over the last `days` days."""
    today = timezone.localdate()
    start = today - timedelta(days=days - 1)
    day_list = [start + timedelta(days=i) for i in range(days)]
    observations = Observation.objects.filter(created__date__gte=start)
    ledger = LedgerEntry.objects.filter(created__date__gte=start)
    if project:
        observations = observations.filter(project=project)
        ledger = ledger.filter(project=project)
    obs_per_day = {
        r["day"]: r["n"]
        for r in observations.annotate(day=TruncDate("created"))
        .values("day")
        .annotate(n=Count("id"))
    }
    gate = Q(
        kind__in=[
            LedgerEntry.Kind.GATE_DENY,
            LedgerEntry.Kind.GATE_CONTEXT,
            LedgerEntry.Kind.GATE_RETRY,
        ]
    )
    rows = (
        ledger.annotate(day=TruncDate("created"))
        .values("day")
        .annotate(
            saved=Sum("tokens_avoided", filter=gate),
            injected=Sum("tokens_shown"),
            spent=Sum("tokens_spent"),
        )
    )
    saved = {r["day"]: r["saved"] or 0 for r in rows}
    injected = {r["day"]: r["injected"] or 0 for r in rows}
    spent = {r["day"]: r["spent"] or 0 for r in rows}
    charts = [
        _chart("Observations per day", "observations", obs_per_day, day_list),
        _chart("Tokens saved by the read gate", "tokens", saved, day_list),
        _chart("Tokens injected into context", "tokens", injected, day_list),
        _chart("Observer spend", "tokens", spent, day_list),
    ]
    totals = {
        "saved": charts[1].total,
        "injected": charts[2].total,
        "spent": charts[3].total,
        "net": charts[1].total - charts[2].total - charts[3].total,
        "observations": charts[0].total,
    }
    return Stats(days=days, charts=charts, totals=totals)
