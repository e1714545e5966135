"""Page-level services for the web app: the timeline feed, My Work cards, live updates,
stats charts and forgetting. Views stay thin: they parse a form, call one of these, render.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, Literal, cast

from django.core.paginator import Page, Paginator
from django.db.models import CharField, Count, Max, Q, QuerySet, Sum, Value
from django.db.models.functions import TruncDate
from django.utils import timezone

from deliverables.models import Deliverable
from deliverables.services import (
    DeliverableMissing,
    deliverable_preview_kind,
    deliverable_read_text,
    markdown_to_safe_html,
)
from memory.models import ContextCache, Event, LedgerEntry, Observation, Prompt, Session, Summary
from memory.recall.context import context_cache_invalidate, context_text
from memory.retrieval.search.query import SearchQuery
from memory.retrieval.search.service import search

log = logging.getLogger(__name__)

FeedKind = Literal["prompt", "observation", "summary"]
FEED_PAGE_SIZE = 40
# Pages poll /live/ this often; see docs/07-web-app.md for why polling, not SSE.
LIVE_POLL_MS = 4000
WORK_PAGE_SIZE = 20
# Text search narrows the feed to at most this many hits per kind (best first).
SEARCH_CAP = 500


def projects_list() -> list[str]:
    """Every project that has a session, most recently active first."""
    rows = Session.objects.values("project").annotate(last=Max("started")).order_by("-last")
    return [r["project"] for r in rows]


# ---------------------------------------------------------------------------------------
# Timeline


@dataclass(frozen=True)
class FeedFilters:
    project: str = ""
    type: str = ""
    kind: str = ""  # "", prompt, observation, summary
    q: str = ""
    date_from: date | None = None
    date_to: date | None = None
    platform: str = ""  # "", claude-code, codex: the agent that did the work

    @property
    def is_default(self) -> bool:
        return not (
            self.project
            or self.type
            or self.kind
            or self.q
            or self.date_from
            or self.date_to
            or self.platform
        )

    def wants(self, kind: FeedKind) -> bool:
        if self.kind and self.kind != kind:
            return False
        # An observation type filter means "show me observations of that type".
        return kind == "observation" or not self.type


@dataclass
class FeedItem:
    kind: FeedKind
    obj: Any  # Prompt | Observation | Summary
    created: datetime


@dataclass
class FeedBlock:
    """Consecutive feed items of one session, shown in the order they happened."""

    session: Session
    items: list[FeedItem] = field(default_factory=list)


@dataclass
class FeedDay:
    day: date
    blocks: list[FeedBlock] = field(default_factory=list)


@dataclass
class Feed:
    page: Page[Any]
    days: list[FeedDay]
    cursor: FeedCursor


def _search_ids(filters: FeedFilters, kind: FeedKind) -> list[int]:
    query = SearchQuery(
        text=filters.q,
        project=filters.project or None,
        kinds=(kind,),
        types=(filters.type,) if filters.type and kind == "observation" else (),
        limit=SEARCH_CAP,
    )
    return [hit.id for hit in search(query) if hit.kind == kind]


def _date_filter(qs: QuerySet[Any], filters: FeedFilters) -> QuerySet[Any]:
    if filters.date_from:
        qs = qs.filter(created__date__gte=filters.date_from)
    if filters.date_to:
        qs = qs.filter(created__date__lte=filters.date_to)
    return qs


def _feed_querysets(filters: FeedFilters) -> list[QuerySet[Any]]:
    """One (id, created, kind) queryset per wanted kind, filtered, ready for a UNION."""
    parts: list[QuerySet[Any]] = []
    # (kind, model, the lookup of its project): a prompt knows its project through its session.
    kinds: list[tuple[FeedKind, type[Prompt] | type[Observation] | type[Summary], str]] = [
        ("prompt", Prompt, "session__project"),
        ("observation", Observation, "project"),
        ("summary", Summary, "project"),
    ]
    for kind, model, project_lookup in kinds:
        if not filters.wants(kind):
            continue
        qs: QuerySet[Any] = model.objects.all()
        if filters.project:
            qs = qs.filter(**{project_lookup: filters.project})
        if kind == "observation" and filters.type:
            qs = qs.filter(type=filters.type)
        if filters.q:
            qs = qs.filter(pk__in=_search_ids(filters, kind))
        parts.append(_date_filter(qs, filters).annotate(kind=Value(kind, output_field=CharField())))
    if filters.platform:
        parts = [qs.filter(session__platform=filters.platform) for qs in parts]
    # Model columns first, the annotation last: UNION aligns columns by position.
    return [qs.order_by().values_list("id", "created", "kind") for qs in parts]


def feed_items_load(rows: Iterable[tuple[int, datetime, str]]) -> list[FeedItem]:
    """Turn (id, created, kind) rows into FeedItems with their objects, keeping the order."""
    rows = list(rows)
    ids: dict[str, list[int]] = defaultdict(list)
    for pk, _, kind in rows:
        ids[kind].append(pk)
    objects: dict[tuple[str, int], Any] = {}
    models: dict[str, type[Prompt] | type[Observation] | type[Summary]] = {
        "prompt": Prompt,
        "observation": Observation,
        "summary": Summary,
    }
    for kind, model in models.items():
        for obj in model.objects.filter(pk__in=ids[kind]).select_related("session"):
            objects[(kind, obj.pk)] = obj
    return [
        FeedItem(kind=cast(FeedKind, kind), obj=objects[(kind, pk)], created=created)
        for pk, created, kind in rows
        if (kind, pk) in objects
    ]


def feed_group(items: list[FeedItem]) -> list[FeedDay]:
    """Newest first by day and by session block; inside a block, oldest first (prompt, work, summary)."""
    days: list[FeedDay] = []
    for item in items:
        day = timezone.localdate(item.created)
        if not days or days[-1].day != day:
            days.append(FeedDay(day=day))
        blocks = days[-1].blocks
        if not blocks or blocks[-1].session.pk != item.obj.session_id:
            blocks.append(FeedBlock(session=item.obj.session))
        blocks[-1].items.append(item)
    order = {"prompt": 0, "observation": 1, "summary": 2}
    for d in days:
        for block in d.blocks:
            block.items.sort(key=lambda i: (i.created, order[i.kind], i.obj.pk))
    return days


def feed_page(*, filters: FeedFilters, page: int | str = 1) -> Feed:
    """One page of the merged prompt/observation/summary feed, newest first."""
    parts = _feed_querysets(filters)
    union = parts[0].union(*parts[1:], all=True) if len(parts) > 1 else parts[0]
    paginator = Paginator(union.order_by("-created", "-id"), FEED_PAGE_SIZE)
    page_obj = paginator.get_page(page)
    items = feed_items_load(page_obj.object_list)
    return Feed(
        page=page_obj,
        days=feed_group(items),
        cursor=feed_cursor(),
    )


@dataclass(frozen=True)
class FeedCursor:
    """The newest ids a page has seen; the live endpoint answers with rows after them."""

    observation: int
    summary: int
    prompt: int


def feed_cursor() -> FeedCursor:
    return FeedCursor(
        observation=Observation.objects.aggregate(m=Max("id"))["m"] or 0,
        summary=Summary.objects.aggregate(m=Max("id"))["m"] or 0,
        prompt=Prompt.objects.aggregate(m=Max("id"))["m"] or 0,
    )


@dataclass
class LiveUpdate:
    items: list[FeedItem]
    cursor: FeedCursor


def feed_live(
    *,
    after_observation: int,
    after_summary: int,
    after_prompt: int,
    project: str = "",
    limit: int = 50,
) -> LiveUpdate:
    """Rows newer than the ids the page already shows (the polling endpoint's answer)."""
    prompts = Prompt.objects.filter(pk__gt=after_prompt).select_related("session").order_by("pk")
    observations = (
        Observation.objects.filter(pk__gt=after_observation)
        .select_related("session")
        .order_by("pk")
    )
    summaries = (
        Summary.objects.filter(pk__gt=after_summary).select_related("session").order_by("pk")
    )
    if project:
        prompts = prompts.filter(session__project=project)
        observations = observations.filter(project=project)
        summaries = summaries.filter(project=project)
    p, o, s = list(prompts[:limit]), list(observations[:limit]), list(summaries[:limit])
    items = [FeedItem("prompt", x, x.created) for x in p]
    items += [FeedItem("observation", x, x.created) for x in o]
    items += [FeedItem("summary", x, x.created) for x in s]
    items.sort(key=lambda i: (i.created, i.obj.pk))
    return LiveUpdate(
        items=items,
        cursor=FeedCursor(
            observation=o[-1].pk if o else after_observation,
            summary=s[-1].pk if s else after_summary,
            prompt=p[-1].pk if p else after_prompt,
        ),
    )


# ---------------------------------------------------------------------------------------
# Settings


def context_caches_invalidate() -> None:
    """Settings changed: every project's index may render differently now."""
    projects = set(ContextCache.objects.values_list("project", flat=True))
    projects.update(Session.objects.values_list("project", flat=True).distinct())
    for project in sorted(projects):
        context_cache_invalidate(project=project)


# ---------------------------------------------------------------------------------------
# My Work


@dataclass
class DeliverableView:
    deliverable: Deliverable
    kind: str  # markdown, html, image, text, '' (download only)
    text: str = ""
    html: str = ""
    truncated: bool = False
    missing: bool = False


@dataclass
class WorkCard:
    prompt: Prompt
    observations: list[Observation]
    summary: Summary | None
    deliverables: list[DeliverableView]
    files_changed: list[str]
    ended: datetime | None

    @property
    def session(self) -> Session:
        return self.prompt.session

    @property
    def duration(self) -> timedelta | None:
        if self.ended is None or self.ended < self.prompt.created:
            return None
        return self.ended - self.prompt.created


@dataclass
class WorkGroup:
    day: date
    project: str
    cards: list[WorkCard] = field(default_factory=list)


@dataclass
class WorkPage:
    page: Page[Any]
    groups: list[WorkGroup]


def deliverable_view(deliverable: Deliverable) -> DeliverableView:
    """What My Work shows of one deliverable: escaped text, sanitised Markdown, or a link."""
    kind = deliverable_preview_kind(deliverable=deliverable)
    view = DeliverableView(deliverable=deliverable, kind=kind)
    if kind in {"text", "markdown"}:
        try:
            text, view.truncated = deliverable_read_text(deliverable=deliverable)
        except (DeliverableMissing, OSError):
            view.missing = True
            return view
        if kind == "markdown":
            view.html = markdown_to_safe_html(text)
        else:
            view.text = text
    return view


def _files_changed(observations: list[Observation], deliverables: list[Deliverable]) -> list[str]:
    seen: dict[str, None] = {}
    for obs in observations:
        for path in obs.files_modified or []:
            if isinstance(path, str) and path:
                seen.setdefault(path, None)
    for d in deliverables:
        seen.setdefault(d.original_path, None)
    return list(seen)


def work_page(
    *,
    project: str = "",
    date_from: date | None = None,
    date_to: date | None = None,
    page: int | str = 1,
) -> WorkPage:
    """My Work: one card per prompt with what it produced, grouped by day and project.

    Rows of a page are fetched in one query per kind (observations, summaries, events,
    deliverables) and bucketed by (session, prompt number) in Python.
    """
    prompts = Prompt.objects.select_related("session").order_by("-created", "-pk")
    if project:
        prompts = prompts.filter(session__project=project)
    prompts = _date_filter(prompts, FeedFilters(date_from=date_from, date_to=date_to))
    page_obj = Paginator(prompts, WORK_PAGE_SIZE).get_page(page)
    page_prompts: list[Prompt] = list(page_obj.object_list)
    session_ids = {p.session_id for p in page_prompts}
    numbers = {p.number for p in page_prompts}

    obs_by: dict[tuple[int, int], list[Observation]] = defaultdict(list)
    for obs in Observation.objects.filter(
        session_id__in=session_ids, prompt_number__in=numbers
    ).order_by("created", "pk"):
        obs_by[(obs.session_id, obs.prompt_number or 0)].append(obs)
    summary_by: dict[tuple[int, int], Summary] = {}
    for found in Summary.objects.filter(
        session_id__in=session_ids, prompt_number__in=numbers
    ).order_by("created", "pk"):
        summary_by[(found.session_id, found.prompt_number or 0)] = found  # the latest wins
    # The turn ended at its last captured hook (Stop included): observations are written
    # when compressed, possibly minutes later, so their time would overstate the work.
    ended_by = {
        (row["session_id"], row["prompt_number"]): row["last"]
        for row in Event.objects.filter(session_id__in=session_ids, prompt_number__in=numbers)
        .values("session_id", "prompt_number")
        .annotate(last=Max("created"))
    }
    deliverables_by: dict[int, list[Deliverable]] = defaultdict(list)
    for d in Deliverable.objects.filter(prompt__in=page_prompts).order_by("created", "pk"):
        deliverables_by[d.prompt_id or 0].append(d)

    groups: list[WorkGroup] = []
    index: dict[tuple[date, str], WorkGroup] = {}
    for prompt in page_prompts:
        key = (prompt.session_id, prompt.number)
        observations = obs_by.get(key, [])
        summary = summary_by.get(key)
        delivered = deliverables_by.get(prompt.pk, [])
        ended = ended_by.get(key)
        if ended is None:
            times = [o.created for o in observations] + ([summary.created] if summary else [])
            ended = max(times) if times else None
        card = WorkCard(
            prompt=prompt,
            observations=observations,
            summary=summary,
            deliverables=[deliverable_view(d) for d in delivered],
            files_changed=_files_changed(observations, delivered),
            ended=ended,
        )
        group_key = (timezone.localdate(prompt.created), prompt.session.project)
        if group_key not in index:
            index[group_key] = WorkGroup(day=group_key[0], project=group_key[1])
            groups.append(index[group_key])
        index[group_key].cards.append(card)
    return WorkPage(page=page_obj, groups=groups)


# ---------------------------------------------------------------------------------------
# Stats


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


# ---------------------------------------------------------------------------------------
# Settings page: the SessionStart preview


@dataclass
class ContextPreview:
    project: str
    text: str


def context_preview(*, project: str) -> ContextPreview:
    """The SessionStart text a new session of `project` would receive right now."""
    root = (
        Session.objects.filter(project=project)
        .exclude(project_root="")
        .order_by("-started")
        .values_list("project_root", flat=True)
        .first()
    )
    return ContextPreview(project=project, text=context_text(project=project, root=root or ""))
