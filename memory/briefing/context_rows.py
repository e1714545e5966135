"""The rows the SessionStart index is rendered from, read as plain tuples.

A cold render at 10k observations made nine ORM queries and built ~60 model instances
(8.9 ms against a target of 3): each query's SQL is now built by the ORM once per vendor
and run raw (memory/runtime/compiled_sql.py), and rows stay tuples. A teammate's token (memory/team/scope.py)
still goes through the ORM, narrowed to their own rows and the projects shared with them
in the query; shared rows name their author and show the viewer's own corrections
(memory/team/sharing.py). All-projects and pinned rows stay the viewer's own: an author's
"in all my projects" memory is theirs, not the team's.

Only what `Observation.objects.briefed(project)` allows is read: current rows, not demoted,
of this project plus the user's all-projects memories. `briefed` itself is one query with an
OR across two columns, which no index answers in date order; here it is two indexed reads
(this project's rows by obs_project_recent_idx, the all-projects ones by
obs_scope_recent_idx) merged, and the pinned rows a third (obs_pinned_idx).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import QuerySet

from memory.models import (
    Observation,
    ObservationFile,
    ObservationRevision,
    Summary,
    currency_tags,
    estimate_tokens,
)
from memory.runtime.compiled_sql import CompiledQuery, db_datetime, rows
from memory.team import scope, sharing

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
    "origin",
    "person_edited",
    "certainty",
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
    # currency_tags of a current row: who wrote it, whether a person corrected it, how sure.
    tags: tuple[str, ...] = ()
    # Team mode: the teammate who shared this row ("" for the viewer's own).
    author: str = ""

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
    # Team mode: the teammate who shared this session ("" for the viewer's own).
    author: str = ""


# The values the compiled queries take for their constants: the ORM makes a string
# constant a parameter, and a compiled query's parameters are all named.
_CONSTANTS = {"current": Observation.Status.CURRENT.value, "all": Observation.Scope.ALL.value}


def _observations(p: Mapping[str, Any], limit: int) -> QuerySet[Any]:
    """This project's briefed rows, newest first (obs_project_recent_idx)."""
    return (
        scope.readable(
            Observation.objects.filter(project=p["project"], status=p["current"], demoted=False)
        )
        .order_by("-created", "-pk")
        .values_list(*OBS_FIELDS)[:limit]
    )


def _wide(p: Mapping[str, Any], limit: int) -> QuerySet[Any]:
    """The user's all-projects memories of other projects, newest first (obs_scope_recent_idx)."""
    return (
        scope.owned(
            Observation.objects.filter(scope=p["all"], status=p["current"], demoted=False).exclude(
                project=p["project"]
            )
        )
        .order_by("-created", "-pk")
        .values_list(*OBS_FIELDS)[:limit]
    )


def _pinned(p: Mapping[str, Any], limit: int) -> QuerySet[Any]:
    """Every pinned current row, newest first, with its project and scope: the partial
    index obs_pinned_idx holds only those few rows. A project or scope filter here would
    make SQLite read the project's whole range instead (no statistics tell it how few
    pinned rows there are), so `pinned_observations` picks this project's in Python."""
    return (
        scope.owned(Observation.objects.filter(pinned=True, status=p["current"], demoted=False))
        .order_by("-created", "-pk")
        .values_list(*OBS_FIELDS, "project", "scope")[:limit]
    )


def _summaries(p: Mapping[str, Any], limit: int) -> QuerySet[Any]:
    return (
        scope.readable(Summary.objects.filter(project=p["project"]))
        .order_by("-created", "-pk")
        .values_list(*SUMMARY_FIELDS)[:limit]
    )


_BUILDERS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "obs": (_observations, ("project", "current")),
    "wide": (_wide, ("project", "current", "all")),
    "pinned": (_pinned, ("current",)),
    "summary": (_summaries, ("project",)),
}
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
# Any curation anywhere (every one writes a revision): a status, pin or scope change moves
# no observation's date, and an all-projects memory is in every project's index.
_NEWEST_REVISION = CompiledQuery(
    lambda p: ObservationRevision.objects.order_by("-pk").values_list("pk")[:1]
)


def rows_of(query: CompiledQuery, **values: Any) -> list[tuple[Any, ...]]:
    return query.rows(**values)


def _limited(kind: str, project: str, limit: int) -> list[tuple[Any, ...]]:
    build, names = _BUILDERS[kind]
    if limit <= 0:
        return []
    values = {"project": project, **_CONSTANTS}
    if scope.restricted_owner() is not None:
        # Narrowed before the LIMIT (build applies scope.owned): never compiled, per viewer.
        return list(build(values, limit))
    key = (kind, limit)
    query = _BY_LIMIT.get(key)
    if query is None:
        query = _BY_LIMIT[key] = CompiledQuery(lambda p: build(p, limit), *names)
    return rows_of(query, **{name: values[name] for name in names})


def _obs_rows(found: list[tuple[Any, ...]]) -> list[ObsRow]:
    out = []
    for (
        pk, obs_type, title, subtitle, narrative, facts, created, read, modified,
        origin, person_edited, certainty,
    ) in found:  # fmt: skip
        text = "".join([title, subtitle, narrative, *map(str, _json_list(facts))])
        tags = currency_tags(
            status="current", certainty=certainty, origin=origin, person_edited=bool(person_edited)
        )
        out.append(
            ObsRow(
                pk,
                obs_type,
                title,
                db_datetime(created),
                estimate_tokens(text) + 20,
                (modified, read),
                tuple(tags),
            )
        )
    reach = scope.readable_reach()
    if reach is None or not reach.shared:
        return out
    return _as_viewer_sees(out)


def _as_viewer_sees(found: list[ObsRow]) -> list[ObsRow]:
    """Team mode: shared rows with their author; a row the viewer marked no longer current
    leaves their index, and their own text replaces the author's."""
    ids = [row.pk for row in found]
    names = sharing.row_authors(Observation, ids)
    marks = sharing.overlays(ids)
    shown = []
    for row in found:
        overlay = marks.get(row.pk)
        if overlay is not None and overlay.status != Observation.Status.CURRENT:
            continue
        if overlay is not None and overlay.title:
            row = replace(row, title=overlay.title)
        shown.append(replace(row, author=names.get(row.pk, "")))
    return shown


def recent_observations(*, project: str, limit: int) -> list[ObsRow]:
    """The newest `limit` rows the index may show (briefed: current, not demoted, this
    project's or the user's all-projects memories), newest first."""
    rows_ = _obs_rows([*_limited("obs", project, limit), *_limited("wide", project, limit)])
    rows_.sort(key=lambda row: (row.created, row.pk), reverse=True)
    return rows_[:limit]


# The pinned section holds what fits a few hundred tokens; these bound the reads. Pins are
# a person's deliberate act (the agent only proposes them): a few dozen, not thousands.
PINNED_MAX = 50
PINNED_READ = 1000


def pinned_observations(*, project: str) -> list[ObsRow]:
    """The pinned rows the index may show (briefed: this project's or all-projects),
    newest first."""
    found = [
        row[:-2]
        for row in _limited("pinned", project, PINNED_READ)
        if row[-2] == project or row[-1] == Observation.Scope.ALL
    ]
    return _obs_rows(found[:PINNED_MAX])


def recent_summaries(*, project: str, limit: int) -> list[SummaryRow]:
    """The project's newest `limit` session summaries, newest first (a teammate's shared
    ones naming their author)."""
    return _summary_rows(_limited("summary", project, limit))


def _summary_rows(found: Iterable[tuple[Any, ...]]) -> list[SummaryRow]:
    rows_ = [SummaryRow(pk, db_datetime(created), *texts) for pk, created, *texts in found]
    reach = scope.readable_reach()
    if reach is None or not reach.shared:
        return rows_
    names = sharing.row_authors(Summary, [row.pk for row in rows_])
    return [replace(row, author=names.get(row.pk, "")) for row in rows_]


def new_since(
    *, project: str, since: datetime, session_pk: int, limit: int
) -> tuple[list[ObsRow], list[SummaryRow]]:
    """What other sessions added to `project` after `since`, newest first: at most `limit`
    briefed observations (one more tells the caller there are more) and three summaries.
    A resumed session's own work is in its conversation already."""
    observations = (
        scope.readable(
            Observation.objects.filter(
                project=project, status=Observation.Status.CURRENT, demoted=False, created__gt=since
            ).exclude(session_id=session_pk)
        )
        .order_by("-created", "-pk")
        .values_list(*OBS_FIELDS)[: limit + 1]
    )
    summaries = (
        scope.readable(Summary.objects.filter(project=project, created__gt=since))
        .exclude(session_id=session_pk)
        .order_by("-created", "-pk")
        .values_list(*SUMMARY_FIELDS)[:3]
    )
    return (
        _obs_rows(list(observations)),
        _summary_rows(summaries),
    )


def newest_stamp(project: str) -> tuple[tuple[int, datetime] | None, int | None, int | None]:
    """(pk, created) of the newest observation, pk of the newest summary and pk of the
    newest revision: what a cached index was rendered from (not narrowed by owner: the
    cache is for unrestricted reads)."""
    obs = rows_of(_NEWEST_OBS, project=project)
    summary = rows_of(_NEWEST_SUMMARY, project=project)
    revision = rows_of(_NEWEST_REVISION)
    return (
        (obs[0][0], db_datetime(obs[0][1])) if obs else None,
        summary[0][0] if summary else None,
        revision[0][0] if revision else None,
    )


def file_rows(ids: list[int]) -> list[tuple[int, str, str]]:
    """(observation id, role, path) of these observations' files, in the order they were
    recorded (the index groups a row under its first modified, else first read, file)."""
    if not ids:
        return []
    found: list[tuple[int, str, str]] = rows(_in_sql("files", _files_query, len(ids)), ids)
    return found


def replaced_rows(ids: list[int]) -> dict[int, list[int]]:
    """For each of these rows, the rows it replaced (theirs is superseded_by it), oldest
    first. A teammate's token sees only their own replaced rows."""
    if not ids:
        return {}
    if scope.restricted_owner() is not None:
        found = list(scope.readable(_replaced_query(ids)))
    else:
        found = rows(_in_sql("replaced", _replaced_query, len(ids)), ids)
    out: dict[int, list[int]] = {}
    for successor, pk in found:
        out.setdefault(successor, []).append(pk)
    return out


def _files_query(ids: list[int]) -> QuerySet[Any]:
    return (
        ObservationFile.objects.filter(observation_id__in=ids)
        .order_by("observation_id", "pk")
        .values_list("observation_id", "role", "path")
    )


def _replaced_query(ids: list[int]) -> QuerySet[Any]:
    # superseded_by's own foreign-key index answers it.
    return (
        Observation.objects.filter(superseded_by_id__in=ids)
        .order_by("superseded_by_id", "pk")
        .values_list("superseded_by_id", "pk")
    )


# The ORM's SQL for one id, its `IN (%s)` widened to each count (CompiledQuery takes named
# scalars only, and an IN list's values are validated as integers while it builds).
_IN_SQL: dict[tuple[str, str, int], str] = {}


def _in_sql(name: str, build: Any, count: int) -> str:
    key = (name, connection.vendor, count)
    sql = _IN_SQL.get(key)
    if sql is None:
        one, params = build([0]).query.sql_with_params()
        if one.count("IN (%s)") != 1 or list(params) != [0]:
            raise RuntimeError(f"unexpected compiled query {one!r}")
        sql = _IN_SQL[key] = one.replace("IN (%s)", f"IN ({', '.join(['%s'] * count)})")
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
