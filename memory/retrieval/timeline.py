"""What happened around one moment of a project: observations, summaries and prompts in order.

The anchor is an observation (`123`), a summary (`S12`), a prompt (`P7`), or the best
search hit of a query. The timeline holds up to `depth_before` rows before it and
`depth_after` after it, of every kind, from the anchor's project only.

Every observation is shown whatever its status (a timeline is what happened), and each
carries its currency tags, so a wrong or superseded row never reads as current.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from memory.models import Observation, Prompt, Summary
from memory.retrieval.search.query import Kind, SearchQuery
from memory.retrieval.search.service import search
from memory.team import scope, sharing

MAX_DEPTH = 100
_ANCHOR = re.compile(r"^#?([SsPpOo]?)(\d+)$")
_KIND_RANK: dict[Kind, int] = {"prompt": 0, "observation": 1, "summary": 2}


class TimelineError(ValueError):
    """The anchor is malformed or names nothing; the message says which."""


class TimelineNotFound(TimelineError, LookupError):
    """The anchor or query is well formed but names nothing (the API answers 404)."""


@dataclass(frozen=True)
class TimelineItem:
    kind: Kind
    id: int
    title: str
    type: str
    project: str
    created_at: datetime
    tokens: int
    session: int
    is_anchor: bool = False
    status: str = "current"
    tags: tuple[str, ...] = ()
    superseded_by: int | None = None
    # Team mode: the teammate who shared this row ("" for the viewer's own).
    author: str = ""

    @property
    def order(self) -> tuple[datetime, int, int]:
        # Prompts open a turn, summaries close it: at equal times that is the natural order.
        return (self.created_at, _KIND_RANK[self.kind], self.id)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "title": self.title,
            "type": self.type,
            "project": self.project,
            "created_at": self.created_at.isoformat(),
            "tokens": self.tokens,
            "session": self.session,
            "is_anchor": self.is_anchor,
            "status": self.status,
            "tags": list(self.tags),
            "superseded_by": self.superseded_by,
            "author": self.author,
        }


@dataclass(frozen=True)
class Timeline:
    anchor: TimelineItem
    items: list[TimelineItem]
    query: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "anchor": self.anchor.as_dict(),
            "query": self.query,
            "items": [item.as_dict() for item in self.items],
        }


def _item(obj: Observation | Summary | Prompt, *, anchor: bool = False) -> TimelineItem:
    if isinstance(obj, Observation):
        return TimelineItem(
            "observation",
            obj.pk,
            obj.title,
            obj.type,
            obj.project,
            obj.created,
            obj.fetch_tokens,
            obj.session_id,
            anchor,
            obj.status,
            tuple(obj.tags),
            obj.superseded_by_id,
        )
    if isinstance(obj, Summary):
        title = (obj.request or obj.completed or obj.learned)[:160]
        text = "".join(
            [obj.request, obj.investigated, obj.learned, obj.completed, obj.next_steps, obj.notes]
        )
        return TimelineItem(
            "summary",
            obj.pk,
            title,
            "summary",
            obj.project,
            obj.created,
            (len(text) + 3) // 4 + 20,
            obj.session_id,
            anchor,
        )
    return TimelineItem(
        "prompt",
        obj.pk,
        obj.text[:160],
        "prompt",
        obj.session.project,
        obj.created,
        (len(obj.text) + 3) // 4 + 10,
        obj.session_id,
        anchor,
    )


def _querysets(project: str) -> list[QuerySet[Any]]:
    # A teammate's token sees only their own rows and shared projects' around any anchor
    # (memory/team/scope.py).
    return [
        scope.readable(Observation.objects.filter(project=project)),
        scope.readable(Summary.objects.filter(project=project)),
        scope.readable(Prompt.objects.filter(session__project=project).select_related("session")),
    ]


def timeline_anchor_resolve(
    *, anchor: str | None = None, query: str | None = None, project: str | None = None
) -> tuple[Observation | Summary | Prompt, str]:
    """The row an anchor names, or the best hit of a query; raises TimelineError
    (TimelineNotFound when it names nothing)."""
    if anchor:
        match = _ANCHOR.match(anchor.strip())
        if not match:
            raise TimelineError(
                f"anchor {anchor!r} is not an id: use 123 (observation), S12 (summary) or P7 (prompt)"
            )
        prefix, pk = match.group(1).upper(), int(match.group(2))
        models: dict[str, type[Observation] | type[Summary] | type[Prompt]] = {
            "S": Summary,
            "P": Prompt,
        }
        model = models.get(prefix, Observation)
        # Another user's id answers as if it did not exist: a guessed id learns nothing.
        found = scope.readable(model.objects.filter(pk=pk)).first()
        if found is None:
            raise TimelineNotFound(f"no {model.__name__.lower()} with id {pk}")
        return found, ""
    if not (query and query.strip()):
        raise TimelineError("give an anchor (observation id, S<id>, P<id>) or a query")
    hits = search(SearchQuery(text=query, project=project, limit=1))
    if not hits:
        raise TimelineNotFound(f"nothing matches {query!r}")
    hit = hits[0]
    by_kind: dict[str, type[Observation] | type[Summary] | type[Prompt]] = {
        "observation": Observation,
        "summary": Summary,
        "prompt": Prompt,
    }
    row: Observation | Summary | Prompt = scope.readable(by_kind[hit.kind].objects.all()).get(
        pk=hit.id
    )
    return row, query


def timeline_build(
    *,
    anchor: str | None = None,
    query: str | None = None,
    project: str | None = None,
    depth_before: int = 10,
    depth_after: int = 10,
) -> Timeline:
    """1. resolve the anchor; 2. per kind, fetch the nearest rows on each side (ties at the
    anchor's instant included); 3. merge, order, and keep the nearest `depth` on each side."""
    depth_before = max(0, min(depth_before, MAX_DEPTH))
    depth_after = max(0, min(depth_after, MAX_DEPTH))
    row, used_query = timeline_anchor_resolve(anchor=anchor, query=query, project=project)
    center = _item(row, anchor=True)
    before: list[TimelineItem] = []
    after: list[TimelineItem] = []
    for qs in _querysets(center.project):
        # Rows at exactly the anchor's instant sort by kind and id, so fetch them all.
        ties = [_item(obj) for obj in qs.filter(created=center.created_at)]
        before += [
            _item(obj)
            for obj in qs.filter(created__lt=center.created_at).order_by("-created", "-pk")[
                :depth_before
            ]
        ]
        after += [
            _item(obj)
            for obj in qs.filter(created__gt=center.created_at).order_by("created", "pk")[
                :depth_after
            ]
        ]
        before += [item for item in ties if item.order < center.order]
        after += [item for item in ties if item.order > center.order]
    before = sorted(before, key=lambda item: item.order)[-depth_before:] if depth_before else []
    after = sorted(after, key=lambda item: item.order)[:depth_after]
    items = _as_viewer_sees([*before, center, *after])
    return Timeline(anchor=items[len(before)], items=items, query=used_query)


def _as_viewer_sees(items: list[TimelineItem]) -> list[TimelineItem]:
    """Team mode: shared rows name their author and show the viewer's own corrections."""
    names = sharing.authors(item.session for item in items)
    marks = sharing.overlays(item.id for item in items if item.kind == "observation")
    shown = []
    for item in items:
        overlay = marks.get(item.id) if item.kind == "observation" else None
        if overlay is not None:
            item = replace(item, status=overlay.status, title=overlay.title or item.title)
        shown.append(replace(item, author=names.get(item.session, "")))
    return shown
