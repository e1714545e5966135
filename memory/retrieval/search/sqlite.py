"""SQLite FTS5 keyword search (the default backend).

The external-content FTS5 tables of migrations 0002/0005, ranked by bm25; only the page
returned is read and highlighted.

An observation's status is a filter on the base table (`o.status`), not an FTS column: the
ranking joins each match to its row by primary key, which also reads the row's
`rank_weight` (hybrid.py), so a hypothesis ranks after a known row of similar score.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import connection

from memory.retrieval.embeddings import vector_index
from memory.retrieval.search.hybrid import (
    FILTER_SCAN_BOUND,
    MIN_SIMILARITY,
    UNCERTAIN,
    rank_weight,
    rank_weight_sql,
)
from memory.retrieval.search.query import (
    KINDS,
    Kind,
    SearchHit,
    SearchQuery,
    as_datetime,
    content_terms,
    file_match_params,
    fts_terms,
    highlight_spans,
    hit_files,
    query_words,
)
from memory.team.scope import Reach

# Per FTS column (migration 0005): title subtitle narrative facts concepts files_read
# files_modified project type; the filter-only columns weigh nothing.
_OBS_WEIGHTS = "5.0, 2.0, 1.0, 1.0, 2.0, 1.0, 1.5, 0.0, 0.0"
_SUMMARY_WEIGHTS = (
    "3.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0"  # request investigated learned completed next notes project
)
# Ranking reads the newest RANK_WINDOW matches of a kind, not all of them: a word found in
# 30,000 rows would cost ~100 ms to rank in full, and when a word is everywhere the recent
# rows are the better answer. Words rarer than the window are ranked over every match.
RANK_WINDOW = 1000
# ...and only the newest COMMON_WINDOW when the query matches at least half of the kind's
# newest 2 * COMMON_WINDOW rows (`_window`). Every term is then in most recent rows,
# where bm25's idf is ~0 (FTS5 clamps it to 1e-6 once a term is in half the rows): the
# order within the window is term frequency over recency, and its head comes from the
# newest rows either way. bm25 costs ~1 µs a row ranked on top of its idf (a read of each
# term's whole doclist): at 10k, ranking 1,000 rows was 1.0 of its 1.5 ms.
COMMON_WINDOW = 100
# The probe runs for all-words matches of at most this many terms, none a prefix
# (`_worth_probing`): what it costs the other matches is about what it saves these.
PROBE_TERMS = 4


@dataclass
class _Sql:
    where: list[str] = field(default_factory=list)
    params: list[Any] = field(default_factory=list)

    def add(self, clause: str, *params: Any) -> None:
        self.where.append(clause)
        self.params.extend(params)

    @property
    def sql(self) -> str:
        return "".join(f" AND {clause}" for clause in self.where)


def _common_filters(
    query: SearchQuery, *, project_col: str | None, created_col: str, session_col: str
) -> _Sql:
    """Row-level filters; project_col None when the FTS tag already filters the project."""
    sql = _Sql()
    if query.owner is not None:
        sessions, params = Reach(query.owner, query.shared).sessions_sql()
        sql.add(f"{session_col} IN ({sessions})", *params)
    if query.project and project_col:
        sql.add(f"{project_col} = %s", query.project)
    if query.since:
        sql.add(f"{created_col} >= %s", connection.ops.adapt_datetimefield_value(query.since))
    if query.until:
        sql.add(f"{created_col} <= %s", connection.ops.adapt_datetimefield_value(query.until))
    return sql


def _observation_filters(query: SearchQuery, *, in_fts: bool, status: bool = True) -> _Sql:
    sql = _common_filters(
        query,
        project_col=None if in_fts else "o.project",
        created_col="o.created",
        session_col="o.session_id",
    )
    if status and query.status == "current":
        sql.add("o.status = %s", "current")
    if query.types and not in_fts:
        sql.add(f"o.type IN ({', '.join(['%s'] * len(query.types))})", *query.types)
    if query.concept:
        sql.add(
            "EXISTS (SELECT 1 FROM json_each(o.concepts) c WHERE lower(c.value) = lower(%s))",
            query.concept.strip(),
        )
    if query.file:
        # A stored path matches when it is the path asked, ends with it (`models.py`), or
        # is the project-relative tail of an absolute path asked.
        match = "({v} = %s OR {v} LIKE %s ESCAPE '\\' OR substr(%s, -length({v}) - 1) = '/' || {v})"
        sql.add(
            "(EXISTS (SELECT 1 FROM memory_observationfile f WHERE f.observation_id = o.id AND "
            + match.format(v="f.path")
            + ") OR EXISTS (SELECT 1 FROM json_each(o.files_modified) m WHERE "
            + match.format(v="m.value")
            + ") OR EXISTS (SELECT 1 FROM json_each(o.files_read) r WHERE "
            + match.format(v="r.value")
            + "))",
            *file_match_params(query.file),
        )
    return sql


# The first nine columns of every kind, then the curation columns (constants for summaries
# and prompts), then the snippet text: `_COLUMNS` of them before the snippet.
_OBS_COLUMNS = (
    "o.id, o.title, o.project, o.created, o.type, o.session_id, o.files_modified, o.files_read, "
    "(length(o.title) + length(o.subtitle) + length(o.narrative) + length(o.facts) + 3) / 4 + 20, "
    "o.status, o.superseded_by_id, o.certainty, o.origin, o.person_edited, o.demoted"
)
_ALWAYS_CURRENT = "'current', NULL, '', 'observer', 0, 0"
_COLUMNS = 15
_SUMMARY_TITLE = (
    "substr(coalesce(nullif(s.request, ''), nullif(s.completed, ''), s.learned), 1, 160)"
)
_SUMMARY_COLUMNS = (
    f"s.id, {_SUMMARY_TITLE}, s.project, s.created, 'summary', s.session_id, '[]', '[]', "
    "(length(s.request) + length(s.investigated) + length(s.learned) + length(s.completed) "
    f"+ length(s.next_steps) + length(s.notes) + 3) / 4 + 20, {_ALWAYS_CURRENT}"
)
_PROMPT_COLUMNS = f"p.id, substr(p.text, 1, 160), ss.project, p.created, 'prompt', p.session_id, '[]', '[]', (length(p.text) + 3) / 4 + 10, {_ALWAYS_CURRENT}"


@dataclass(frozen=True)
class _KindSql:
    table: str
    fts: str
    alias: str
    columns: str
    weights: str
    join: str
    fallback_snippet: str
    # The text a highlighted snippet is cut from (title first: it is already shown).
    snippet_source: str


_KIND_SQL: dict[Kind, _KindSql] = {
    "observation": _KindSql(
        "memory_observation",
        "memory_observation_fts",
        "o",
        _OBS_COLUMNS,
        _OBS_WEIGHTS,
        "",
        "substr(coalesce(nullif(o.subtitle, ''), o.narrative), 1, 200)",
        "o.subtitle || char(10) || o.narrative || char(10) || o.facts || char(10) || o.concepts || char(10) || o.files_modified || char(10) || o.files_read",
    ),
    "summary": _KindSql(
        "memory_summary",
        "memory_summary_fts",
        "s",
        _SUMMARY_COLUMNS,
        _SUMMARY_WEIGHTS,
        "",
        "substr(coalesce(nullif(s.completed, ''), s.learned), 1, 200)",
        "s.request || char(10) || s.investigated || char(10) || s.learned || char(10) || s.completed || char(10) || s.next_steps || char(10) || s.notes",
    ),
    "prompt": _KindSql(
        "memory_prompt",
        "memory_prompt_fts",
        "p",
        _PROMPT_COLUMNS,
        "1.0",
        " JOIN memory_session ss ON ss.id = p.session_id",
        "substr(p.text, 1, 200)",
        "p.text",
    ),
}


def _filters(kind: Kind, query: SearchQuery, *, in_fts: bool = False, status: bool = True) -> _Sql:
    """Row-level filters. `in_fts`: project and type are left out, because the FTS query
    already filters them through the tags of migration 0005 (prompts have no tag).
    `status`: False leaves out the observation status filter."""
    if kind == "observation":
        return _observation_filters(query, in_fts=in_fts, status=status)
    if kind == "summary":
        return _common_filters(
            query,
            project_col=None if in_fts else "s.project",
            created_col="s.created",
            session_col="s.session_id",
        )
    return _common_filters(
        query, project_col="ss.project", created_col="p.created", session_col="p.session_id"
    )


def _hit(
    kind: Kind,
    row: tuple[Any, ...],
    score: float,
    snippet: str,
    highlights: tuple[tuple[int, int], ...] = (),
) -> SearchHit:
    return SearchHit(
        id=row[0], kind=kind, title=row[1] or "", project=row[2], created_at=as_datetime(row[3]), type=row[4],
        session=row[5], files=hit_files(row[6], row[7]), tokens=int(row[8]), score=score, snippet=snippet or "",
        highlights=highlights, status=row[9], superseded_by=row[10], certainty=row[11], origin=row[12],
        person_edited=bool(row[13]), demoted=bool(row[14]),
    )  # fmt: skip


def _recent(kind: Kind, query: SearchQuery) -> list[SearchHit]:
    """No text: the newest rows that pass the filters."""
    k, filters = _KIND_SQL[kind], _filters(kind, query)
    sql = (
        f"SELECT {k.columns}, {k.fallback_snippet} FROM {k.table} {k.alias}{k.join} WHERE 1 = 1{filters.sql} "
        f"ORDER BY {k.alias}.created DESC, {k.alias}.id DESC LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*filters.params, query.limit + query.offset])
        return [_hit(kind, row[:_COLUMNS], 0.0, row[_COLUMNS]) for row in cursor.fetchall()]


def fts_tag(prefix: str, value: str) -> str:
    """The token migration 0005 indexes for a project (`zp`) or type (`zt`): hex of the UTF-8."""
    return f'"{prefix}{value.encode("utf-8").hex()}"'


def _fts_filters(kind: Kind, query: SearchQuery) -> str:
    """Project and type as FTS5 tag lookups: one more doclist to intersect, inside the index."""
    parts = []
    if query.project and kind != "prompt":
        parts.append(f"project : {fts_tag('zp', query.project)}")
    if query.types and kind == "observation":
        parts.append("type : (" + " OR ".join(fts_tag("zt", t) for t in query.types) + ")")
    return "".join(f" AND {part}" for part in parts)


def _window(k: _KindSql, source: str) -> str:
    """SQL for how many of the newest matches to rank: COMMON_WINDOW when at least that many
    are among the kind's newest 2 * COMMON_WINDOW rows (the match is dense), else
    RANK_WINDOW. The probe reads only those newest rows' doclist entries, so a sparse match
    costs it no scan."""
    recent = f"SELECT id FROM {k.table} ORDER BY id DESC LIMIT 1 OFFSET {2 * COMMON_WINDOW - 1}"
    # Fewer rows than that: every row is among the newest.
    probe = f"SELECT 1 {source} AND {k.fts}.rowid >= coalesce(({recent}), 0) LIMIT {COMMON_WINDOW}"
    return (
        f"CASE WHEN (SELECT count(*) FROM ({probe})) = {COMMON_WINDOW} "
        f"THEN {COMMON_WINDOW} ELSE {RANK_WINDOW} END"
    )


def _ranked(
    kind: Kind, query: SearchQuery, terms: str, *, probe: bool = False, rows: bool = False
) -> list[tuple[Any, ...]]:
    """(score, kind, id) of the best matches among the newest RANK_WINDOW of this kind
    (COMMON_WINDOW when `probe` finds the match dense), ranked by bm25 alone: the doclists
    carry all it needs, no row is read. One statement: the density probe is its LIMIT.

    `rows`: (score, kind, id, row), the row's columns and snippet text read by the same
    statement, for a search whose every ranked row is a row it returns (`search_sqlite`)."""
    if kind == "observation" and not _filters(kind, query, in_fts=True, status=False).where:
        head = _currency_ranked(query, terms, probe=probe, rows=rows)
        if head is not None:
            return head
    k, filters = _KIND_SQL[kind], _filters(kind, query, in_fts=True)
    # An observation's score is weighted by its row's currency, so its row is always read.
    weight = f" * {rank_weight_sql(k.alias)}" if kind == "observation" else ""
    # CROSS JOIN keeps the FTS table as the outer loop, so rowid order comes from the index.
    join = (
        f" CROSS JOIN {k.table} {k.alias} ON {k.alias}.id = {k.fts}.rowid{k.join}"
        if filters.where or weight
        else ""
    )
    source = f"FROM {k.fts}{join} WHERE {k.fts} MATCH %s{filters.sql}"
    source_params = [f"({terms}){_fts_filters(kind, query)}", *filters.params]
    page = query.limit + query.offset
    # A page past the small window keeps the large one, so no page is cut short.
    probe = probe and page <= COMMON_WINDOW
    window = _window(k, source) if probe else str(RANK_WINDOW)
    rank_sql = (
        f"SELECT rowid, score FROM (SELECT {k.fts}.rowid AS rowid, -bm25({k.fts}, {k.weights}){weight} AS score "
        f"{source} ORDER BY {k.fts}.rowid DESC LIMIT ({window})) ORDER BY score DESC LIMIT %s"
    )
    params = [*source_params, *(source_params if probe else ()), page]
    with connection.cursor() as cursor:
        if not rows:
            cursor.execute(rank_sql, params)
            return [(float(score), kind, int(pk)) for pk, score in cursor.fetchall()]
        cursor.execute(
            f"SELECT r.score, {k.columns}, {k.snippet_source} FROM ({rank_sql}) r "
            f"CROSS JOIN {k.table} {k.alias} ON {k.alias}.id = r.rowid{k.join}",
            params,
        )
        return [(float(row[0]), kind, int(row[1]), row[1:]) for row in cursor.fetchall()]


def _currency_ranked(
    query: SearchQuery, terms: str, *, probe: bool, rows: bool
) -> list[tuple[Any, ...]] | None:
    """`_ranked` for observations when currency is the only row-level filter: bm25 over the
    FTS index alone (no row read per match), then the head's few rows that are not current
    or are guesses, read by primary key, filtered and weighted. Joining every match of the
    window to its row only to read two columns cost a third of a common search.

    Exact while at least `page` rows of the head keep their bm25 score: a row below the
    head scores no more than any of those. Otherwise (None) the caller ranks the slow way."""
    k, page = _KIND_SQL["observation"], query.limit + query.offset
    head_size = 2 * page + 10
    source = f"FROM {k.fts} WHERE {k.fts} MATCH %s"
    source_params = [f"({terms}){_fts_filters('observation', query)}"]
    probe = probe and page <= COMMON_WINDOW
    window = _window(k, source) if probe else str(RANK_WINDOW)
    uncertain = ", ".join(["%s"] * len(UNCERTAIN))
    head_sql = (
        f"(SELECT rowid, score FROM (SELECT {k.fts}.rowid AS rowid, -bm25({k.fts}, {k.weights}) "
        f"AS score {source} ORDER BY {k.fts}.rowid DESC LIMIT ({window})) "
        "ORDER BY score DESC LIMIT %s) h"
    )
    params = [*source_params, *(source_params if probe else ()), head_size]
    # One statement either way: the head by bm25, each row joined by primary key, for its
    # columns when they are wanted, else only to tell whether it is off (not current, or a
    # guess): most heads have none.
    with connection.cursor() as cursor:
        if rows:
            cursor.execute(
                f"SELECT h.score, {k.columns}, {k.snippet_source} FROM {head_sql} "
                f"CROSS JOIN {k.table} {k.alias} ON {k.alias}.id = h.rowid{k.join} "
                "ORDER BY h.score DESC",
                params,
            )
            fetched = [(row[1], row[0], row[10], row[12], row[1:]) for row in cursor.fetchall()]
        else:
            cursor.execute(
                f"SELECT h.rowid, h.score, o.status, o.certainty, NULL FROM {head_sql} "
                "LEFT JOIN memory_observation o ON o.id = h.rowid "
                f"AND (o.status != %s OR o.certainty IN ({uncertain})) ORDER BY h.score DESC",
                [*params, "current", *UNCERTAIN],
            )
            fetched = cursor.fetchall()
    kept = 0
    ranked: list[tuple[float, int, Any]] = []
    for pk, score, status, certainty, row in fetched:
        weight = rank_weight(status, certainty) if status else 1.0
        kept += weight == 1.0
        if query.current_only and status and status != "current":
            continue
        ranked.append((float(score) * weight, int(pk), row))
    if len(fetched) == head_size and kept < page:
        return None
    ranked.sort(key=lambda item: (item[0], item[1]), reverse=True)
    if not rows:
        return [(score, "observation", pk) for score, pk, _ in ranked[:page]]
    return [(score, "observation", pk, row) for score, pk, row in ranked[:page]]


def _highlighted(kind: Kind, row: tuple[Any, ...], score: float, words: list[str]) -> SearchHit:
    """The hit of a row read as `_KindSql.columns` then its snippet text."""
    snippet, spans = highlight_spans(row[_COLUMNS] or "", words)
    return _hit(kind, row, score, snippet, tuple(spans))


def _hydrate(page: list[tuple[float, Kind, int]], terms: str) -> list[SearchHit]:
    """Columns for the page returned (one primary-key read per kind) and a snippet each.

    Not FTS5's snippet(): it needs the MATCH again, and re-running a prefix query per row
    cost 70 ms at 100k rows; highlighting the page in Python costs well under one.
    """
    words = query_words(terms)
    found: dict[tuple[Kind, int], SearchHit] = {}
    with connection.cursor() as cursor:
        for kind in KINDS:
            scores = {pk: score for score, k_, pk in page if k_ == kind}
            if not scores:
                continue
            k = _KIND_SQL[kind]
            # The ids as one JSON parameter: the statement's text stays the same, so SQLite
            # prepares it once (ids spelled into the text cost a prepare a search, ~60 µs).
            cursor.execute(
                f"SELECT {k.columns}, {k.snippet_source} FROM {k.table} {k.alias}{k.join} "
                f"WHERE {k.alias}.id IN (SELECT value FROM json_each(%s))",
                [json.dumps(list(scores))],
            )
            for row in cursor.fetchall():
                found[(kind, row[0])] = _highlighted(kind, row, scores[row[0]], words)
    # A row deleted between the two reads simply drops out.
    return [found[(kind, pk)] for _, kind, pk in page if (kind, pk) in found]


def _worth_probing(terms: list[str]) -> bool:
    """Whether the density probe may pay for itself: it opens the match a second time, at
    ~50 µs a term at 100k rows, and a prefix term merges every word it covers each time
    (~1 ms at 100k). A match of more than PROBE_TERMS terms is seldom dense (each term must
    be in half the recent rows). Only the all-words match is probed: an any-word match is
    dense when one word is common, while its rare words carry the rank."""
    return len(terms) <= PROBE_TERMS and not any(term.endswith("*") for term in terms)


def keyword_ranked(query: SearchQuery) -> tuple[list[tuple[float, Kind, int]], str, bool]:
    """(score, kind, id) best first for the first `offset + limit` rows, the FTS match used,
    and whether every term matched (False: the any-word fallback answered)."""
    return _keyword(query, rows=False)


def _keyword(query: SearchQuery, *, rows: bool) -> tuple[list[tuple[Any, ...]], str, bool]:
    """`keyword_ranked`, each with its row when `rows` (`_ranked`)."""
    kinds = [kind for kind in KINDS if query.wants(kind)]
    terms = fts_terms(query.text)
    if not terms:
        return [], "", True
    match = " ".join(terms)
    probe = _worth_probing(terms)
    ranked = [row for kind in kinds for row in _ranked(kind, query, match, probe=probe, rows=rows)]
    strict = True
    if not ranked and len(terms) > 1:
        # Natural-language questions rarely have every word in one row: widen to any word
        # but the filler ones (which match everything); bm25 ranks rows holding more, and
        # rarer, words first.
        match = " OR ".join(content_terms(terms))
        ranked = [row for kind in kinds for row in _ranked(kind, query, match, rows=rows)]
        strict = False
    # Equal scores: the newer row (higher id) first.
    ranked.sort(key=lambda row: (row[0], row[2]), reverse=True)
    return ranked, match, strict


def term_coverage(rows: list[tuple[Kind, int]], text: str) -> float:
    """`hybrid.Backend.term_coverage`: one query, each (row, word) pair an FTS5 lookup by
    rowid (a seek in each word's index, however common the word)."""
    terms = content_terms(fts_terms(text))
    if not terms or not rows:
        return 1.0
    parts: list[str] = []
    params: list[Any] = []
    for n, (kind, pk) in enumerate(rows):
        fts = _KIND_SQL[kind].fts
        for term in terms:
            parts.append(f"SELECT {n} FROM {fts} WHERE {fts} MATCH ? AND rowid = ?")
            params += [term, pk]
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts), params)
        held = Counter(n for (n,) in cursor.fetchall())
    return max(held.values(), default=0) / len(terms)


def search_sqlite(query: SearchQuery) -> list[SearchHit]:
    """FTS5 search: all terms must match; when nothing does, any term may (ranked by bm25).
    Each kind is ranked on its own, the results merged by score, and only the page returned
    is read and highlighted."""
    if query.text.strip() and not fts_terms(query.text):
        return []  # only punctuation: nothing that could match
    if not query.text.strip():
        kinds = [kind for kind in KINDS if query.wants(kind)]
        hits = [hit for kind in kinds for hit in _recent(kind, query)]
        hits.sort(key=lambda hit: (hit.created_at, hit.id), reverse=True)
        return hits[query.offset : query.offset + query.limit]
    if not query.offset and sum(query.wants(kind) for kind in KINDS) == 1:
        # One kind, first page: every row ranked is a row returned, so the rank's statement
        # reads them (one statement a search: the separate read was ~0.1 ms of 1.5 at 10k).
        ranked, match, _ = _keyword(query, rows=True)
        words = query_words(match)
        return [_highlighted(kind, row, score, words) for score, kind, _, row in ranked]
    ranked, match, _ = keyword_ranked(query)
    return _hydrate(ranked[query.offset : query.offset + query.limit], match)


def hits_by_ids(page: list[tuple[float, Kind, int]], text: str) -> list[SearchHit]:
    """Hits for rows found by vector (hybrid/semantic), highlighted with the query's words."""
    return _hydrate(page, " ".join(fts_terms(text)))


def allowed_ids(kind: Kind, query: SearchQuery, bound: int, *, status: bool = True) -> set[int]:
    """Ids of the newest `bound` rows of `kind` passing the query's filters (`status`:
    False leaves out the observation status filter, so a project's ids come from its index
    alone)."""
    k, filters = _KIND_SQL[kind], _filters(kind, query, status=status)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {k.alias}.id FROM {k.table} {k.alias}{k.join} WHERE 1 = 1{filters.sql} "
            f"ORDER BY {k.alias}.id DESC LIMIT %s",
            [*filters.params, bound],
        )
        return {row[0] for row in cursor.fetchall()}


# A search by meaning within one large project first takes the kind's nearest rows,
# OVERFETCH times as many as it needs over the project's share of the kind, and keeps those
# in the project: one scan of the vectors, the filter checked on those few rows by primary
# key. Reading every id of a 12,500-row project first (`allowed_ids`) and testing each
# vector against that set cost 4x as much (observations, 100k rows).
OVERFETCH = 2
# ...up to this many rows: a project holding a smaller share of the kind is searched
# through its own ids (`allowed_ids`, fast when they are few).
OVERFETCH_MAX = 2000


def nearest(
    kind: Kind, query: SearchQuery, model: str, vector: Any, k: int, candidates: list[int]
) -> list[tuple[float, int]]:
    """The `k` nearest vectors of `kind` by the configured index (`vector_index`: the int8
    copy on disk, the in-heap scan, or sqlite-vec where it loads and measures faster); with
    filters, only the rows the keyword search's own filter SQL selects.

    The status filter does not make a search narrow: rows no longer true are few. So it
    is checked on the nearest rows of a wider set (`_wider`: the whole kind, or the
    project's rows), by primary key (`_passing`), and only when that leaves fewer than k
    of a longer list does the exact filtered scan run. The same holds for a project that
    is a fair share of the kind."""
    # Keyword candidates are in the full scan already.
    if not _filters(kind, query).where:
        return vector_index.nearest(kind, model, vector, k=k, min_score=MIN_SIMILARITY)
    wider = _wider(kind, query, k)
    if wider is not None:
        allowed, depth = wider
        near = vector_index.nearest(
            kind, model, vector, k=depth, allowed=allowed, min_score=MIN_SIMILARITY
        )
        passing = _passing(kind, query, [pk for _, pk in near])
        kept = [(score, pk) for score, pk in near if pk in passing]
        if len(kept) >= k or len(near) < depth:
            return kept[:k]
    allowed = allowed_ids(kind, query, FILTER_SCAN_BOUND)
    return vector_index.nearest(kind, model, vector, k=k, allowed=allowed, min_score=MIN_SIMILARITY)


def _wider(kind: Kind, query: SearchQuery, k: int) -> tuple[set[int] | None, int] | None:
    """(rows to search: None for all of the kind, how many nearest to read) of a set wider
    than the filters allow, or None: search exactly the rows the filters allow."""
    if not _filters(kind, query, status=False).where:
        return None, 2 * k  # the status filter alone
    if not _project_only(kind, query):
        return None
    in_project, newest = _project_rows(kind, query.project or "")
    if not in_project:
        return None
    depth = math.ceil(OVERFETCH * k * newest / in_project)
    if depth <= OVERFETCH_MAX and in_project > 2 * depth:
        return None, depth
    if _filters(kind, query).where == _filters(kind, query, status=False).where:
        return None  # no status filter: the project's ids are exactly the rows allowed
    # A small project: its ids (one covering index read) are few enough to search directly.
    return allowed_ids(kind, query, FILTER_SCAN_BOUND, status=False), 2 * k


def _project_only(kind: Kind, query: SearchQuery) -> bool:
    """Whether the project (and the status) is the query's only filter for `kind`."""
    bare = replace(query, project=None)
    return bool(query.project) and not _filters(kind, bare, status=False).where


def _project_rows(kind: Kind, project: str) -> tuple[int, int]:
    """(rows of `kind` in `project`, the kind's newest id): a count over the project's
    index, and the share it makes of the kind (ids only grow; a deleted row makes the share
    look smaller, so the search reads more, never fewer, rows)."""
    k = _KIND_SQL[kind]
    column = "ss.project" if kind == "prompt" else f"{k.alias}.project"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT count(*) FROM {k.table} {k.alias}{k.join} WHERE {column} = %s), "
            f"(SELECT max(id) FROM {k.table})",
            [project],
        )
        in_project, newest = cursor.fetchone()
    return int(in_project), int(newest or 0)


def _passing(kind: Kind, query: SearchQuery, ids: list[int]) -> set[int]:
    """Which of `ids` the query's filters (status included) allow: each read by primary key."""
    if not ids:
        return set()
    k, filters = _KIND_SQL[kind], _filters(kind, query)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {k.alias}.id FROM {k.table} {k.alias}{k.join} "
            f"WHERE {k.alias}.id IN (SELECT value FROM json_each(%s)){filters.sql}",
            [json.dumps(ids), *filters.params],
        )
        return {row[0] for row in cursor.fetchall()}


class SqliteBackend:
    """The SQLite side of `hybrid.search_mode`."""

    keyword = staticmethod(search_sqlite)

    @staticmethod
    def keyword_ranked(query: SearchQuery) -> tuple[list[tuple[float, Kind, int]], bool]:
        ranked, _, strict = keyword_ranked(query)
        return ranked, strict

    hits_by_ids = staticmethod(hits_by_ids)
    nearest = staticmethod(nearest)
    term_coverage = staticmethod(term_coverage)
