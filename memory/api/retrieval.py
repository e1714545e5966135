"""Retrieval endpoints: search, timeline, observations by id, code outlines, forget.

Thin handlers: parse, call one service, shape the answer. Every bad input is a 4xx with
`{"error": "..."}` that says what to change.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from ninja import Query, Router, Schema, Status
from pydantic import Field

from memory import config
from memory.api import json_answer
from memory.housekeeping.forget import ForgetError, ForgetRequest, observations_forget
from memory.models import Observation, currency_tags
from memory.protocol.netpolicy import is_loopback
from memory.retrieval.outline.model import OutlineError
from memory.retrieval.outline.outline import smart_outline
from memory.retrieval.outline.roots import code_path, recorded_roots
from memory.retrieval.outline.symbols import render_search, smart_search
from memory.retrieval.outline.unfold import smart_unfold
from memory.retrieval.search.fold import hits_with_folds
from memory.retrieval.search.query import KINDS, Kind, SearchQuery, StatusFilter, as_datetime
from memory.retrieval.search.service import effective_mode, mode_note, search
from memory.retrieval.timeline import TimelineError, TimelineNotFound, timeline_build
from memory.runtime import compiled_sql as db
from memory.runtime.foreground import foreground
from memory.team import sharing
from memory.team.scope import readable, restricted_owner

router = Router(tags=["retrieval"])

SEARCH_LIMIT_MAX = 100
IDS_MAX = 200
# Row ids are 64-bit: a bigger number cannot name a row, and SQLite raises OverflowError on it.
ID_MAX = 2**63 - 1


class ErrorOut(Schema):
    error: str


class SearchHitOut(Schema):
    id: int
    kind: Literal["observation", "summary", "prompt"]
    title: str
    project: str
    created_at: datetime
    type: str
    score: float
    snippet: str = Field(description="The matching passage, plain text (no markup).")
    highlights: list[list[int]] = Field(
        default_factory=list,
        description="The matches in `snippet`: [start, end) character (code point) offsets.",
    )
    tokens: int = Field(description="Roughly what fetching the full row costs.")
    session: int | None
    files: list[str]
    fold: str = Field(
        "",
        description="Near-identical hits (same kind, type, title and first file in one session or day) share this key.",
    )
    fold_size: int = Field(1, description="How many hits share this `fold` key.")
    fold_lead: bool = Field(True, description="The best-ranked hit of its fold.")
    status: str = Field(
        "current",
        description="current, or wrong/outdated/superseded/abandoned/retired (only with status=all).",
    )
    tags: list[str] = Field(
        default_factory=list,
        description='How current the row is and who wrote it ("superseded by #12", "agent-written", "hypothesis", …).',
    )
    superseded_by: int | None = Field(None, description="The row that replaced this one.")
    author: str = Field(
        "", description="Team mode: the teammate who shared this row (empty for your own)."
    )


class SearchOut(Schema):
    query: str
    mode: Literal["hybrid", "keyword", "semantic"] = Field(
        description="The mode the search ran in: keyword when search by meaning is not installed."
    )
    note: str = Field("", description="Why the search ran in another mode than asked, or empty.")
    results: list[SearchHitOut]


class SearchFilters(Schema):
    q: str = Field(
        "", description="Any text; quoted phrases and a trailing * (prefix) are understood."
    )
    project: str | None = None
    limit: int = Field(20, ge=1, le=SEARCH_LIMIT_MAX)
    offset: int = Field(0, ge=0, le=10_000)
    type: str | None = Field(
        None, description="Observation types, comma-separated (bugfix,feature,…)."
    )
    concept: str | None = None
    file: str | None = Field(None, description="A file path or its tail (`models.py`).")
    since: datetime | None = None
    until: datetime | None = None
    kind: str | None = Field(None, description="observation, summary, prompt (comma-separated).")
    mode: Literal["hybrid", "keyword", "semantic"] = Field(
        "hybrid",
        description="keyword (words), semantic (meaning, by embedding) or hybrid (both, fused).",
    )
    status: StatusFilter = Field(
        "current",
        description="current: only observations still true; all: the wrong, outdated, superseded, "
        "abandoned and retired ones too, labelled in `tags` and ranked after.",
    )


def search_kinds(raw: str | None) -> tuple[Kind, ...]:
    if not raw:
        return KINDS
    kinds = tuple(part.strip() for part in raw.split(",") if part.strip())
    for kind in kinds:
        if kind not in KINDS:
            raise ValueError(f"kind {kind!r} is not one of observation, summary, prompt")
    return kinds  # type: ignore[return-value]


def _search_body(out: dict[str, Any], hits: list[dict[str, Any]]) -> dict[str, Any]:
    """The 200 answer as ninja renders `SearchOut`, without validating it again.

    Validating 20 hits through ninja's schemas cost ~0.45 ms of a ~2.5 ms search;
    every value here is already typed (SearchHit.as_dict, fold.hits_with_folds), so only
    the field order and the types the schema would coerce to are kept: `created_at` a
    datetime (rendered by ninja's encoder, e.g. `…:52.651Z`), `score` a float.
    tests/retrieval/test_search.py pins the body to the schema-validated one."""
    results = [
        {
            "id": hit["id"], "kind": hit["kind"], "title": hit["title"], "project": hit["project"],
            "created_at": datetime.fromisoformat(hit["created_at"]), "type": hit["type"],
            "score": float(hit["score"]), "snippet": hit["snippet"], "highlights": hit["highlights"],
            "tokens": hit["tokens"], "session": hit["session"], "files": hit["files"],
            "fold": hit["fold"], "fold_size": hit["fold_size"], "fold_lead": hit["fold_lead"],
            "status": hit["status"], "tags": hit["tags"], "superseded_by": hit["superseded_by"],
            "author": hit["author"],
        }
        for hit in hits
    ]  # fmt: skip
    return {**out, "results": results}


@router.get("/search", response={200: SearchOut, 400: ErrorOut})
def search_endpoint(
    request: HttpRequest, filters: Query[SearchFilters]
) -> Status[dict[str, Any]] | HttpResponse:
    """Ranked hits, best first (newest first without `q`): an index to pick from, cheaply."""
    try:
        kinds = search_kinds(filters.kind)
    except ValueError as exc:
        return Status(400, {"error": str(exc)})
    with foreground():  # a caller waits on a search: background work gives way
        return json_answer(search_body(filters, kinds))


def search_body(filters: SearchFilters, kinds: tuple[Kind, ...]) -> dict[str, Any]:
    """The 200 answer of a search."""
    types = tuple(t.strip() for t in (filters.type or "").split(",") if t.strip())
    query = SearchQuery(
        text=filters.q, project=filters.project or None, kinds=kinds, types=types, concept=filters.concept or None,
        file=filters.file or None, since=filters.since, until=filters.until, limit=filters.limit, offset=filters.offset,
        mode=filters.mode, status=filters.status,
    )  # fmt: skip
    hits = hits_with_folds(search(query))
    out = {
        "query": filters.q,
        "mode": effective_mode(filters.mode),
        "note": mode_note(filters.mode, kinds),
    }
    return _search_body(out, hits)


class TimelineItemOut(Schema):
    kind: Literal["observation", "summary", "prompt"]
    id: int
    title: str
    type: str
    project: str
    created_at: datetime
    tokens: int
    session: int
    is_anchor: bool
    status: str = "current"
    tags: list[str] = Field(default_factory=list)
    superseded_by: int | None = None
    author: str = Field("", description="Team mode: the teammate who shared this row.")


class TimelineOut(Schema):
    anchor: TimelineItemOut
    query: str
    items: list[TimelineItemOut]


@router.get("/timeline", response={200: TimelineOut, 400: ErrorOut, 404: ErrorOut})
def timeline_endpoint(
    request: HttpRequest,
    anchor: str | None = None,
    q: str | None = None,
    project: str | None = None,
    depth_before: int = 10,
    depth_after: int = 10,
) -> Status[dict[str, Any]]:
    """What happened around an anchor (`123`, `S12`, `P7`) or the best hit of `q`, in order."""
    try:
        timeline = timeline_build(
            anchor=anchor,
            query=q,
            project=project,
            depth_before=depth_before,
            depth_after=depth_after,
        )
    except TimelineError as exc:
        code = 404 if isinstance(exc, TimelineNotFound) else 400
        return Status(code, {"error": str(exc)})
    return Status(200, timeline.as_dict())


class ObservationOut(Schema):
    id: int
    gid: str = Field(description="The global id: the same on every machine and in every export.")
    type: str
    title: str
    subtitle: str
    facts: list[Any]
    narrative: str
    concepts: list[Any]
    files_read: list[Any]
    files_modified: list[Any]
    project: str
    session: int
    tool_name: str
    prompt_number: int | None
    created_at: datetime
    # Curation (memory/curation/): how current the row is, who wrote it, what replaced it.
    status: str = "current"
    status_reason: str = ""
    superseded_by: int | None = None
    superseded_by_title: str = Field("", description="The title of the row that replaced it.")
    tags: list[str] = Field(default_factory=list)
    pinned: bool = False
    demoted: bool = False
    certainty: str = ""
    origin: str = "observer"
    person_edited: bool = False
    topic: str = ""
    scope: str = "project"
    edited_at: datetime | None = None
    author: str = Field(
        "", description="Team mode: the teammate who shared this row (empty for your own)."
    )
    viewer_corrected: bool = Field(
        False, description="Team mode: shown through your own correction of a shared row."
    )


class ObservationsOut(Schema):
    observations: list[ObservationOut]
    missing: list[int]


def parse_ids(raw: str) -> list[int]:
    parts = [part.strip().lstrip("#") for part in raw.split(",") if part.strip()]
    if not parts:
        raise ValueError("ids is empty: give observation ids, e.g. ids=12,40,7")
    if len(parts) > IDS_MAX:
        raise ValueError(f"at most {IDS_MAX} ids at once")
    bad = [part for part in parts if not part.isascii() or not part.isdigit() or int(part) > ID_MAX]
    if bad:
        raise ValueError(
            f"not an observation id: {bad[0]!r} (ids are positive whole numbers, comma-separated)"
        )
    return [int(part) for part in parts]


@router.get("/observations", response={200: ObservationsOut, 400: ErrorOut})
def observations_by_id(request: HttpRequest, ids: str) -> Status[dict[str, Any]] | HttpResponse:
    """Full observations in the order asked; ids that do not exist are listed in `missing`."""
    try:
        wanted = parse_ids(ids)
    except ValueError as exc:
        return Status(400, {"error": str(exc)})
    with foreground():  # a caller waits on these rows: background work gives way
        return json_answer(observations_body(wanted))


def observations_body(wanted: list[int]) -> dict[str, Any]:
    """The 200 answer of /api/observations: each row with its currency tags and, when it was
    superseded, its successor's title; the rows fetched are stamped as recalled."""
    found = _observations_found(wanted)
    _curation_shown(found)
    return {
        "observations": [found[pk] for pk in dict.fromkeys(wanted) if pk in found],
        "missing": [pk for pk in dict.fromkeys(wanted) if pk not in found],
    }


# Observation.as_dict()'s keys and the columns they come from, for the raw read below.
_AS_DICT_COLUMNS = (
    ("id", "id"), ("gid", "gid"), ("type", "type"), ("title", "title"), ("subtitle", "subtitle"),
    ("facts", "facts"), ("narrative", "narrative"), ("concepts", "concepts"),
    ("files_read", "files_read"), ("files_modified", "files_modified"), ("project", "project"),
    ("session", "session_id"), ("tool_name", "tool_name"), ("prompt_number", "prompt_number"),
    ("created_at", "created"), ("status", "status"), ("status_reason", "status_reason"),
    ("superseded_by", "superseded_by_id"), ("pinned", "pinned"), ("demoted", "demoted"),
    ("certainty", "certainty"), ("origin", "origin"), ("person_edited", "person_edited"),
    ("topic", "topic"), ("scope", "scope"), ("edited_at", "edited"),
)  # fmt: skip
_JSON_KEYS = frozenset({"facts", "concepts", "files_read", "files_modified"})
_BOOL_KEYS = frozenset({"pinned", "demoted", "person_edited"})


def _observations_found(wanted: list[int]) -> dict[int, dict[str, Any]]:
    """`Observation.as_dict()` of each row of `wanted` this request may read, by id, with
    `created_at` a datetime (as ObservationOut would coerce it; see _search_body).

    A teammate's token: another user's ids are `missing`, exactly like ids never made,
    unless a share opens them (`readable`). With no restriction on the local SQLite worker, the columns are read with one
    cursor and no model instance: the ORM's compile, converters and instances were two
    thirds of this call (the authenticated-call row)."""
    if restricted_owner() is not None or connection.vendor != "sqlite":
        rows = readable(Observation.objects.all()).in_bulk(wanted)
        # Team mode: a shared row names its author and shows the viewer's own correction.
        names = sharing.authors(row.session_id for row in rows.values())
        overlays = sharing.overlays(rows)
        found = {
            pk: {
                "viewer_corrected": False,
                **sharing.overlaid(row.as_dict(), overlays.get(pk)),
                "author": names.get(row.session_id, ""),
            }
            for pk, row in rows.items()
        }
        for row in found.values():
            row["created_at"] = datetime.fromisoformat(row["created_at"])
            row["edited_at"] = row["edited_at"] and datetime.fromisoformat(row["edited_at"])
        return found
    columns = ", ".join(column for _, column in _AS_DICT_COLUMNS)
    marks = ", ".join(["%s"] * len(wanted))
    # db.rows: the sqlite3 connection itself, with the checks of Django's cursor.
    records = db.rows(
        f"SELECT {columns} FROM {Observation._meta.db_table} WHERE id IN ({marks})", wanted
    )
    found = {}
    for record in records:
        row = {
            key: (json.loads(value) if key in _JSON_KEYS else value)
            for (key, _), value in zip(_AS_DICT_COLUMNS, record, strict=True)
        }
        row["created_at"] = as_datetime(row["created_at"])
        row["edited_at"] = row["edited_at"] and as_datetime(row["edited_at"])
        for key in _BOOL_KEYS:
            row[key] = bool(row[key])
        # Team mode's fields (above): no viewer here, so no teammate's row and no overlay.
        row["author"], row["viewer_corrected"] = "", False
        found[row["id"]] = row
    return found


def _curation_shown(found: dict[int, dict[str, Any]]) -> None:
    """Each row's `tags` and `superseded_by_title` (one read of the successors the viewer
    may see), and `last_recalled` stamped on the rows fetched (one UPDATE): what the
    consolidation pass's demotion reads."""
    successors = {row["superseded_by"] for row in found.values() if row["superseded_by"]}
    titles = (
        dict(readable(Observation.objects.filter(pk__in=successors)).values_list("pk", "title"))
        if successors
        else {}
    )
    for row in found.values():
        row["tags"] = currency_tags(
            status=row["status"], certainty=row["certainty"], origin=row["origin"],
            person_edited=row["person_edited"], superseded_by=row["superseded_by"],
        )  # fmt: skip
        row["superseded_by_title"] = titles.get(row["superseded_by"], "")
    if found:
        Observation.objects.filter(pk__in=list(found)).update(last_recalled=timezone.now())


# --- code outlines: these read files on this machine ------------------------------------------


def _local_path(path: str, root: str | None) -> Path:
    """The file an agent names, refused when the worker may not read it.

    A shared (non-loopback or PostgreSQL) worker never reads files for a client: the MCP
    server, which runs on the client, does the outline locally. Otherwise the resolved path
    must lie under a project root cmem has recorded, outside its data dir and every secret
    location (memory.retrieval.outline.roots); `root`, when given, must itself be one.
    """
    if not is_loopback(config.worker_host()) or config.database_url():
        raise PermissionError(
            "code outlines read local files, so a shared worker does not serve them; use the MCP tools locally"
        )
    known = recorded_roots()
    base = str(code_path(root, roots=known)) if root else ""
    return code_path(path, roots=[base] if base else known, base=base)


class OutlineOut(Schema):
    path: str
    language: str
    lines: int
    imports: list[str]
    symbols: list[dict[str, Any]]
    has_errors: bool
    source_tokens: int
    tokens: int
    text: str


class UnfoldOut(Schema):
    path: str
    symbol: str
    kind: str
    start_line: int
    end_line: int
    source: str
    text: str


class SymbolMatchOut(Schema):
    path: str
    symbol: str
    kind: str
    signature: str
    start_line: int
    end_line: int
    doc: str
    score: float


class SymbolsOut(Schema):
    query: str
    root: str
    matches: list[SymbolMatchOut]
    text: str


_PATH_ERRORS = {200: dict[str, Any], 400: ErrorOut, 403: ErrorOut, 422: ErrorOut}


def _path_error(exc: Exception) -> Status[dict[str, Any]]:
    code = (
        403 if isinstance(exc, PermissionError) else 422 if isinstance(exc, OutlineError) else 400
    )
    return Status(code, {"error": str(exc)})


class RootsOut(Schema):
    roots: list[str]


@router.get("/outline/roots", response={200: RootsOut, 403: ErrorOut})
def roots_endpoint(request: HttpRequest) -> Status[dict[str, Any]]:
    """The project roots the code tools may read (the MCP server asks for them)."""
    if not is_loopback(config.worker_host()) or config.database_url():
        return Status(403, {"error": "a shared worker does not serve local paths"})
    return Status(200, {"roots": recorded_roots()})


@router.get("/outline", response={**_PATH_ERRORS, 200: OutlineOut})
def outline_endpoint(
    request: HttpRequest, path: str, root: str | None = None
) -> Status[dict[str, Any]]:
    """A source file's classes, functions and methods with signatures and line ranges."""
    try:
        return Status(200, smart_outline(_local_path(path, root), display=path).as_dict())
    except (ValueError, PermissionError) as exc:
        return _path_error(exc)


@router.get("/outline/unfold", response={**_PATH_ERRORS, 200: UnfoldOut})
def unfold_endpoint(
    request: HttpRequest, path: str, symbol: str, root: str | None = None
) -> Status[dict[str, Any]]:
    """The exact source of one symbol (`Class.method`), with line numbers."""
    try:
        return Status(200, smart_unfold(_local_path(path, root), symbol, display=path).as_dict())
    except (ValueError, PermissionError) as exc:
        return _path_error(exc)


@router.get("/outline/search", response={**_PATH_ERRORS, 200: SymbolsOut})
def symbols_endpoint(
    request: HttpRequest, q: str, root: str, limit: int = 20, file_pattern: str = ""
) -> Status[dict[str, Any]]:
    """Symbols matching `q` across the folder `root`, respecting its .gitignore."""
    try:
        folder = _local_path(root, None)
    except (ValueError, PermissionError) as exc:
        return _path_error(exc)
    if not folder.is_dir():
        return Status(422, {"error": f"{root} is not a folder"})
    matches = smart_search(q, folder, limit=max(1, min(limit, 100)), file_pattern=file_pattern)
    return Status(
        200,
        {
            "query": q,
            "root": str(folder),
            "matches": [m.as_dict() for m in matches],
            "text": render_search(q, matches),
        },
    )


# --- forget --------------------------------------------------------------------------------


class ForgetIn(Schema):
    ids: list[Annotated[int, Field(ge=1, le=ID_MAX)]] = Field(
        default_factory=list, description="Observation ids."
    )
    query: str = ""
    project: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    kinds: list[Literal["observation", "summary", "prompt"]] = Field(default=["observation"])
    query_limit: int = Field(100, ge=1, le=1000)
    dry_run: bool = Field(True, description="List what would go without deleting (the default).")


class ForgetOut(Schema):
    dry_run: bool
    count: int
    deleted: int
    rows: dict[str, list[dict[str, Any]]]


@router.post("/forget", response={200: ForgetOut, 400: ErrorOut})
def forget_endpoint(request: HttpRequest, payload: ForgetIn) -> Status[dict[str, Any]]:
    """Delete observations by ids, query, project and date range (AND); dry run by default."""
    try:
        result = observations_forget(request=ForgetRequest(
            ids=tuple(payload.ids), query=payload.query, project=payload.project or None, since=payload.since,
            until=payload.until, kinds=tuple(payload.kinds), query_limit=payload.query_limit, dry_run=payload.dry_run,
        ))  # fmt: skip
    except ForgetError as exc:
        return Status(400, {"error": str(exc)})
    return Status(200, result.as_dict())
