"""Forgetting: delete observations (and, on request, summaries and prompts) the user names.

Criteria combine with AND: ids, a search query, a project, a date range. At least one is
required so that an empty request can never wipe the memory. A dry run returns exactly the
rows a real run would delete. The FTS indexes follow through their delete triggers and
ObservationFile rows cascade, all inside one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from memory.models import ContextCache, Observation, Prompt, Summary, Tombstone
from memory.retrieval.search.query import KINDS, Kind, SearchQuery
from memory.retrieval.search.service import search
from memory.team import scope

# A query deletes at most this many rows per kind: a broad word should not empty a project.
QUERY_LIMIT_MAX = 1000


class ForgetError(ValueError):
    """The request names nothing to forget, or names it wrongly."""


@dataclass(frozen=True)
class ForgetRequest:
    ids: tuple[int, ...] = ()
    query: str = ""
    project: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    # Ids always name observations; the other criteria apply to every kind listed here.
    kinds: tuple[Kind, ...] = ("observation",)
    query_limit: int = 100
    dry_run: bool = True


@dataclass
class ForgetResult:
    dry_run: bool
    # kind -> [{id, title, project, created_at}] of the rows that go (or would go).
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return sum(len(rows) for rows in self.rows.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "dry_run": self.dry_run,
            "count": self.count,
            "deleted": 0 if self.dry_run else self.count,
            "rows": self.rows,
        }


_MODELS: dict[Kind, type[Observation] | type[Summary] | type[Prompt]] = {
    "observation": Observation,
    "summary": Summary,
    "prompt": Prompt,
}


def _selection(kind: Kind, request: ForgetRequest) -> QuerySet[Any]:
    # A teammate's token forgets only their own rows (memory/team/scope.py).
    qs: QuerySet[Any] = scope.owned(_MODELS[kind].objects.all())
    if kind == "prompt":
        qs = qs.select_related("session")
    if request.ids:
        qs = qs.filter(pk__in=request.ids) if kind == "observation" else qs.none()
    if request.project:
        qs = (
            qs.filter(session__project=request.project)
            if kind == "prompt"
            else qs.filter(project=request.project)
        )
    if request.since:
        qs = qs.filter(created__gte=request.since)
    if request.until:
        qs = qs.filter(created__lte=request.until)
    if request.query.strip():
        limit = max(1, min(request.query_limit, QUERY_LIMIT_MAX))
        hits = search(
            SearchQuery(
                text=request.query,
                project=request.project,
                kinds=(kind,),
                since=request.since,
                until=request.until,
                limit=limit,
                status="all",  # forgetting reaches retired and superseded rows too
            )
        )
        qs = qs.filter(pk__in=[hit.id for hit in hits])
    return qs


def _row(kind: Kind, obj: Any) -> dict[str, Any]:
    if kind == "observation":
        title, project = obj.title, obj.project
    elif kind == "summary":
        title, project = (obj.request or obj.completed)[:160], obj.project
    else:
        title, project = obj.text[:160], obj.session.project
    return {"id": obj.pk, "title": title, "project": project, "created_at": obj.created.isoformat()}


def observations_forget(*, request: ForgetRequest) -> ForgetResult:
    """1. check there is a criterion; 2. select per kind; 3. unless a dry run, delete them
    all in one transaction and drop the cached SessionStart index of each project touched."""
    if not (
        request.ids or request.query.strip() or request.project or request.since or request.until
    ):
        raise ForgetError("name what to forget: ids, a query, a project or a date range")
    unknown = [kind for kind in request.kinds if kind not in KINDS]
    if unknown:
        raise ForgetError(f"unknown kind {unknown[0]!r}: use observation, summary or prompt")
    kinds: list[Kind] = sorted(
        set(request.kinds) | ({"observation"} if request.ids else set()), key=KINDS.index
    )
    result = ForgetResult(dry_run=request.dry_run)
    with transaction.atomic():
        selections = {kind: _selection(kind, request) for kind in kinds}
        for kind, qs in selections.items():
            result.rows[kind] = [_row(kind, obj) for obj in qs.order_by("created", "pk")]
        if request.dry_run:
            return result
        for kind in selections:
            doomed = _MODELS[kind].objects.filter(pk__in=[row["id"] for row in result.rows[kind]])
            if kind != "prompt":  # prompts travel inside their session's files
                _tombstones(kind, doomed)
            doomed.delete()
        projects = {row["project"] for rows in result.rows.values() for row in rows}
        for project in sorted(projects):
            transaction.on_commit(partial(ContextCache.invalidate, project=project))
    return result


def _tombstones(kind: Kind, doomed: QuerySet[Any]) -> None:
    """Remember what was forgotten by global id, so sync makes other machines forget it too."""
    owner = scope.writer_id()
    Tombstone.objects.bulk_create(
        [
            Tombstone(gid=gid, kind=kind, project=project, owner_id=owner)
            for gid, project in doomed.values_list("gid", "project")
        ],
        ignore_conflicts=True,
    )
