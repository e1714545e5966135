"""The rows the SessionStart index is rendered from, read as plain tuples.

A cold render at 10k observations made nine ORM queries and built ~60 model instances
(8.9 ms against a target of 3): each query's SQL is now built by the ORM once per vendor
and run raw (memory/runtime/compiled_sql.py), and rows stay tuples. A teammate's token (memory/team/scope.py)
still goes through the ORM, narrowed to their own rows in the query.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import QuerySet

from memory.models import Observation, ObservationFile, Summary, estimate_tokens
from memory.runtime.compiled_sql import CompiledQuery, db_datetime, rows
from memory.team import scope

OBS_FIELDS = (
    "pk",
    "type",
    "title",
    "subtitle",
    "narrative",
    "facts",
    "created",
    "files_read",
    "files_modified",
)
SUMMARY_FIELDS = (
    "pk",
    "created",
    "request",
    "investigated",
    "learned",
    "completed",
    "next_steps",
)


@dataclass(frozen=True)
class ObsRow:
    pk: int
    type: str
    title: str
    created: datetime
    fetch_tokens: int  # what get_observations([id]) costs, as Observation.fetch_tokens
    # files_modified and files_read as stored (JSON text): decoded only for the few rows
    # without ObservationFile rows (files_listed), not for every row of every render.
    files_raw: tuple[Any, Any]

    def files_listed(self) -> list[Any]:
        """files_modified, then files_read."""
        modified, read = self.files_raw
        return [*_json_list(modified), *_json_list(read)]


@dataclass(frozen=True)
class SummaryRow:
    pk: int
    created: datetime
    request: str
    investigated: str
    learned: str
    completed: str
    next_steps: str


def _observations(p: Mapping[str, Any], limit: int) -> QuerySet[Any]:
    return (
        scope.owned(Observation.objects.filter(project=p["project"]))
        .order_by("-created", "-pk")
        .values_list(*OBS_FIELDS)[:limit]
    )


def _summaries(p: Mapping[str, Any], limit: int) -> QuerySet[Any]:
    return (
        scope.owned(Summary.objects.filter(project=p["project"]))
        .order_by("-created", "-pk")
        .values_list(*SUMMARY_FIELDS)[:limit]
    )


_BY_LIMIT: dict[tuple[str, int], CompiledQuery] = {}
_NEWEST_OBS = CompiledQuery(
    lambda p: (
        Observation.objects.filter(project=p["project"])
        .order_by("-created")
        .values_list("pk", "created")[:1]
    ),
    "project",
)
_NEWEST_SUMMARY = CompiledQuery(
    lambda p: (
        Summary.objects.filter(project=p["project"]).order_by("-created").values_list("pk")[:1]
    ),
    "project",
)


def rows_of(query: CompiledQuery, **values: Any) -> list[tuple[Any, ...]]:
    return query.rows(**values)


def _limited(kind: str, project: str, limit: int) -> list[tuple[Any, ...]]:
    build = _observations if kind == "obs" else _summaries
    if limit <= 0:
        return []
    if scope.restricted_owner() is not None:
        # Narrowed before the LIMIT (build applies scope.owned): never compiled, per viewer.
        return list(build({"project": project}, limit))
    key = (kind, limit)
    query = _BY_LIMIT.get(key)
    if query is None:
        query = _BY_LIMIT[key] = CompiledQuery(lambda p: build(p, limit), "project")
    return rows_of(query, project=project)


def recent_observations(*, project: str, limit: int) -> list[ObsRow]:
    """The project's newest `limit` observations, newest first."""
    out = []
    for pk, obs_type, title, subtitle, narrative, facts, created, read, modified in _limited(
        "obs", project, limit
    ):
        text = "".join([title, subtitle, narrative, *map(str, _json_list(facts))])
        out.append(
            ObsRow(
                pk,
                obs_type,
                title,
                db_datetime(created),
                estimate_tokens(text) + 20,
                (modified, read),
            )
        )
    return out


def recent_summaries(*, project: str, limit: int) -> list[SummaryRow]:
    """The project's newest `limit` session summaries, newest first."""
    return [
        SummaryRow(pk, db_datetime(created), *texts)
        for pk, created, *texts in _limited("summary", project, limit)
    ]


def newest_stamp(project: str) -> tuple[tuple[int, datetime] | None, int | None]:
    """(pk, created) of the newest observation and pk of the newest summary: what a cached
    index was rendered from (not narrowed by owner: the cache is for unrestricted reads)."""
    obs = rows_of(_NEWEST_OBS, project=project)
    summary = rows_of(_NEWEST_SUMMARY, project=project)
    return (
        (obs[0][0], db_datetime(obs[0][1])) if obs else None,
        summary[0][0] if summary else None,
    )


def file_rows(ids: list[int]) -> list[tuple[int, str, str]]:
    """(observation id, role, path) of these observations' files, in the order they were
    recorded (the index groups a row under its first modified, else first read, file)."""
    if not ids:
        return []
    found: list[tuple[int, str, str]] = rows(_files_sql(len(ids)), ids)
    return found


def _files_query(ids: list[int]) -> QuerySet[Any]:
    return (
        ObservationFile.objects.filter(observation_id__in=ids)
        .order_by("observation_id", "pk")
        .values_list("observation_id", "role", "path")
    )


# The ORM's SQL for one id, its `IN (%s)` widened to each count (CompiledQuery takes named
# scalars only, and an IN list's values are validated as integers while it builds).
_FILES_SQL: dict[tuple[str, int], str] = {}


def _files_sql(count: int) -> str:
    key = (connection.vendor, count)
    sql = _FILES_SQL.get(key)
    if sql is None:
        one, params = _files_query([0]).query.sql_with_params()
        if one.count("IN (%s)") != 1 or list(params) != [0]:
            raise RuntimeError(f"unexpected compiled query {one!r}")
        sql = _FILES_SQL[key] = one.replace("IN (%s)", f"IN ({', '.join(['%s'] * count)})")
    return sql


def _json_list(value: Any) -> list[Any]:
    """A JSON list column: raw cursors return JSON as text on both backends."""
    if value == "[]":  # most rows' files_read or files_modified: no decoder for it
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    return value if isinstance(value, list) else []
