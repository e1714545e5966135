"""The timeline feed and its live updates: prompts, observations and summaries merged
newest first, grouped by day and session, and the rows a page's poll has not seen yet.
Views stay thin: they parse a form, call one of these, render. (My Work's cards are
deliverables/work.py; the stats page's charts memory/dashboard/charts.py.)
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Literal, cast

from django.core.paginator import Page, Paginator
from django.db.models import CharField, Max, QuerySet, Value
from django.utils import timezone

from memory.hooks.spool import spool_backlog
from memory.models import Event, Observation, Prompt, Session, Summary
from memory.retrieval.search.query import SearchQuery
from memory.retrieval.search.service import search

log = logging.getLogger(__name__)

FeedKind = Literal["prompt", "observation", "summary"]
FEED_PAGE_SIZE = 40
# Pages poll /live/ this often; see docs/design/web-app.md for why polling, not SSE.
LIVE_POLL_MS = 4000
# Text search narrows the feed to at most this many hits per kind (best first).
SEARCH_CAP = 500


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
        status="all",  # the feed lists every row, as without a query
    )
    return [hit.id for hit in search(query) if hit.kind == kind]


def date_filter(
    qs: QuerySet[Any], *, date_from: date | None = None, date_to: date | None = None
) -> QuerySet[Any]:
    """Rows created on or between the given local days (My Work filters the same way)."""
    if date_from:
        qs = qs.filter(created__date__gte=date_from)
    if date_to:
        qs = qs.filter(created__date__lte=date_to)
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
        qs = date_filter(qs, date_from=filters.date_from, date_to=filters.date_to)
        parts.append(qs.annotate(kind=Value(kind, output_field=CharField())))
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
    """Newest first by day; one block per session and day, the block of the most recent
    activity first; inside a block, oldest first (prompt, work, summary).

    One block per session, not per run of consecutive rows: parallel sessions logging in the
    same minute interleave by time, and grouping runs split each session into pieces."""
    days: list[FeedDay] = []
    blocks_of_day: dict[int, FeedBlock] = {}
    for item in items:  # newest first
        day = timezone.localdate(item.created)
        if not days or days[-1].day != day:
            days.append(FeedDay(day=day))
            blocks_of_day = {}
        block = blocks_of_day.get(item.obj.session_id)
        if block is None:
            block = blocks_of_day[item.obj.session_id] = FeedBlock(session=item.obj.session)
            days[-1].blocks.append(block)
        block.items.append(item)
    for d in days:
        for block in d.blocks:
            block.items.sort(key=lambda i: (i.created, KIND_ORDER[i.kind], i.obj.pk))
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
    queue: int = 0  # events waiting for compression (the page's queue indicator)


KIND_ORDER = {"prompt": 0, "observation": 1, "summary": 2}


def feed_sort_key(item: FeedItem) -> str:
    """The order of an item inside its session block (feed_group's key) as a string that
    sorts the same way, so the page's script can slot a live item without parsing dates."""
    created = item.created.astimezone(UTC)
    return f"{created:%Y-%m-%dT%H:%M:%S.%f}|{KIND_ORDER[item.kind]}|{item.obj.pk:012d}"


def feed_day_key(item: FeedItem) -> date:
    """The local day an item is listed under (feed_group's day)."""
    return timezone.localdate(item.created)


def queue_waiting(*, project: str = "") -> int:
    """Events captured but not compressed yet, plus the spool's backlog (the spool has no
    project until ingested, so it counts toward every view)."""
    events = Event.objects.pending()
    if project:
        events = events.filter(session__project=project)
    return events.count() + spool_backlog()


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
        queue=queue_waiting(project=project),
        items=items,
        cursor=FeedCursor(
            observation=o[-1].pk if o else after_observation,
            summary=s[-1].pk if s else after_summary,
            prompt=p[-1].pk if p else after_prompt,
        ),
    )
