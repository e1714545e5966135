"""PostgreSQL full-text search for `memory.retrieval.search.service.search` (team mode).

Same contract as the FTS5 path: a SearchQuery in, SearchHit rows out, best first. Each
searchable table has a generated `search_vector` column with a GIN index (migration 0003);
`to_tsquery('english', …)` gives stemming like FTS5's porter tokenizer, `ts_rank` weights a
title match (A) above a narrative (C) or file-name (D) match, and `ts_headline` marks the
passage. Ranking reads only a bounded window of the newest matches (`_candidates`), and
headlines re-parse the text, so they are made only for the page returned
(docs/design/postgres-at-scale.md has each query's plan at 1M rows).
An observation's status filters on its row (`o.status`), and its score is weighted by
`hybrid.rank_weight_sql`, as on SQLite.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from django.db import connection

from memory.retrieval.embeddings import index, pgvector
from memory.retrieval.search import hybrid
from memory.retrieval.search.query import (
    HIGHLIGHT_CLOSE,
    HIGHLIGHT_OPEN,
    Kind,
    SearchHit,
    SearchQuery,
    content_terms,
    file_match_params,
    fts_terms,
)
from memory.team.scope import Reach

# Documents split on these too (migration 0003), so `search.py` finds `memory/retrieval/search/service.py`.
SPLIT_CHARS = "/._-:@"
_SPLIT = str.maketrans(SPLIT_CHARS, " " * len(SPLIT_CHARS))
_WORD = re.compile(r"\w+")
# ts_rank weights for {D, C, B, A}: files 1.5, narrative/facts/concepts 1, subtitle 2, title 5,
# the same proportions as the FTS5 path's bm25 column weights.
RANK_WEIGHTS = "{0.3, 0.2, 0.4, 1.0}"
_RANK = f"ts_rank('{RANK_WEIGHTS}', o.search_vector, q.q)"
# Matches are ranked from the newest RANK_FLOOR (or the page, when deeper), never from every
# match: ts_rank reads each ranked row's tsvector, and the GIN index says which rows match but
# not which are recent, so ranking every match of a common word at 1M rows fetched tens of
# thousands of rows. They are looked for in a window of the newest WINDOW_FIRST ids (rows are
# numbered as they are stored); a window holding fewer grows by the factor its own hit rate
# says is missing (at least 4, at most WINDOW_GROWTH_MAX) until it covers the table, so a
# rare term still ranks every row holding it (`_candidates`).
WINDOW_FIRST = 50_000
WINDOW_GROWTH_MAX = 64
RANK_FLOOR = 200
# An owner holding less than this share of the sessions is selective enough for the session
# index to serve their scope (`_filters`, `_candidates`).
SELECTIVE_SHARE = 0.1
HEADLINE_OPTIONS = f'StartSel="{HIGHLIGHT_OPEN}", StopSel="{HIGHLIGHT_CLOSE}", MaxWords=24, MinWords=8, MaxFragments=2, FragmentDelimiter=" … "'


@dataclass(frozen=True)
class _Kind:
    table: str
    project: str  # SQL for the row's project
    join: str
    title: str
    type: str
    tokens: str
    session: str
    headline_text: str
    fallback_snippet: str
    files: str
    # status, superseded_by, certainty, origin, person_edited, demoted
    curation: str = "'current', NULL::bigint, '', 'observer', false, false"


KINDS: dict[Kind, _Kind] = {
    "observation": _Kind(
        table="memory_observation o",
        project="o.project",
        join="",
        title="o.title",
        type="o.type",
        tokens="(length(o.title) + length(o.subtitle) + length(o.narrative) + length(o.facts::text) + 3) / 4 + 20",
        session="o.session_id",
        headline_text="o.title || ' — ' || o.subtitle || ' ' || o.narrative",
        fallback_snippet="left(coalesce(nullif(o.subtitle, ''), o.narrative), 200)",
        files="o.files_modified || o.files_read",
        curation="o.status, o.superseded_by_id, o.certainty, o.origin, o.person_edited, o.demoted",
    ),
    "summary": _Kind(
        table="memory_summary o",
        project="o.project",
        join="",
        title="left(coalesce(nullif(o.request, ''), nullif(o.completed, ''), o.learned), 160)",
        type="'summary'",
        tokens="(length(o.request) + length(o.investigated) + length(o.learned) + length(o.completed) + length(o.next_steps) + length(o.notes) + 3) / 4 + 20",
        session="o.session_id",
        headline_text="o.request || ' ' || o.learned || ' ' || o.completed || ' ' || o.investigated || ' ' || o.next_steps || ' ' || o.notes",
        fallback_snippet="left(coalesce(nullif(o.completed, ''), o.learned), 200)",
        files="'[]'::jsonb",
    ),
    "prompt": _Kind(
        table="memory_prompt o",
        project="s.project",
        join="JOIN memory_session s ON s.id = o.session_id",
        title="left(o.text, 160)",
        type="'prompt'",
        tokens="(length(o.text) + 3) / 4 + 10",
        session="o.session_id",
        headline_text="o.text",
        fallback_snippet="left(o.text, 200)",
        files="'[]'::jsonb",
    ),
}


def tsquery_terms(text: str) -> list[str]:
    """The user's text as tsquery terms, read exactly as the FTS5 path reads it
    (`memory.retrieval.search.service.fts_terms`): `"a phrase"` is a phrase, a trailing `*` makes a prefix,
    everything else is literal text split like the stored text (`foo.bar` is the phrase
    "foo bar"). Words are \\w runs, so no character of the input is ever tsquery syntax."""
    text = text.encode("utf-8", "replace").decode("utf-8").replace("\0", " ")
    terms: list[str] = []
    for raw in fts_terms(text):
        prefix = raw.endswith("*")
        words = _WORD.findall(
            raw.rstrip("*").strip('"').replace('""', '"').translate(_SPLIT).lower()
        )
        if not words:
            continue
        quoted = [f"'{w}'" for w in words]
        if prefix:
            quoted[-1] += ":*"
        terms.append("(" + " <-> ".join(quoted) + ")")
    return terms


def _filters(
    query: SearchQuery, kind: Kind, spec: _Kind, *, owner_index: bool = False
) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    if query.owner is not None:
        # The owner's sessions as an array made once, not a join: joined, the planner walked
        # the sessions and scanned the GIN index again for each (40 scans of a common word's
        # 58k matches, over a second at 1M rows). `owner_index`: the session index may serve
        # it (a selective owner); else `+ 0` keeps it a filter on the rows the other
        # conditions fetched (a teammate's 240k index entries cost more than the window).
        # With shares, the array holds the shared projects' sessions too (scope.Reach).
        column = spec.session if owner_index else f"{spec.session} + 0"
        sessions, scoped = Reach(query.owner, query.shared).sessions_sql()
        where.append(f"{column} = ANY(ARRAY({sessions}))")
        params.extend(scoped)
    if query.project:
        where.append(f"{spec.project} = %s")
        params.append(query.project)
    if query.since:
        where.append("o.created >= %s")
        params.append(query.since)
    if query.until:
        where.append("o.created <= %s")
        params.append(query.until)
    if kind == "observation":
        if query.status == "current":
            where.append("o.status = %s")
            params.append("current")
        if query.types:
            where.append("o.type = ANY(%s)")
            params.append(list(query.types))
        if query.concept:
            where.append(
                "EXISTS (SELECT 1 FROM jsonb_array_elements_text(o.concepts) c WHERE lower(c) = lower(%s))"
            )
            params.append(query.concept)
        if query.file:
            # As on SQLite: a stored path matches when it is the path asked, ends with it
            # (`models.py`), or is the project-relative tail of an absolute path asked.
            match = (
                "({v} = %s OR {v} LIKE %s ESCAPE '\\' OR right(%s, length({v}) + 1) = '/' || {v})"
            )
            where.append(
                "(EXISTS (SELECT 1 FROM memory_observationfile f WHERE f.observation_id = o.id AND "
                + match.format(v="f.path")
                + ") OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(o.files_modified) m(v) WHERE "
                + match.format(v="m.v")
                + ") OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(o.files_read) r(v) WHERE "
                + match.format(v="r.v")
                + "))"
            )
            params += file_match_params(query.file)
    return where, params


def _select(query: SearchQuery, kind: Kind, window: int) -> tuple[str, list[Any]]:
    """No text: the newest `window` rows passing the filters."""
    spec = KINDS[kind]
    where, params = _filters(query, kind, spec)
    sql = (
        f"SELECT {_columns(spec, '0.0')}, {spec.fallback_snippet} FROM {spec.table} {spec.join} "
        f"{'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY o.created DESC, o.id DESC LIMIT %s"
    )
    return sql, [*params, window]


def _columns(spec: _Kind, score: str) -> str:
    return (
        f"o.id, {spec.title}, {spec.project}, o.created, {spec.type}, {score}, {spec.tokens}, "
        f"{spec.session}, {spec.files}, {spec.curation}"
    )


def _candidates(cursor: Any, query: SearchQuery, kind: Kind, tsquery: str, want: int) -> list[int]:
    """Ids of the newest `want` matches of `tsquery` passing the query's filters (fewer when
    the table holds fewer), looked for in windows of the newest ids (module constants).

    Each window is one statement the planner answers either way that is cheap: a backwards
    walk of the primary key checking each row (matches everywhere: it stops after `want`),
    or the GIN index's matches intersected with the primary key's range (matches sparse:
    only the window's matches are fetched). Without the window the second way fetched
    every match in the table, to sort them by date."""
    spec = KINDS[kind]
    selective = query.owner is not None and _selective_owner(
        cursor, Reach(query.owner, query.shared)
    )
    where, params = _filters(query, kind, spec, owner_index=selective)
    cursor.execute(f"SELECT min(o.id), max(o.id) FROM {spec.table}")
    low, high = cursor.fetchone()
    if high is None:
        return []
    matches = (
        f"SELECT o.id FROM {spec.table} {spec.join} "
        f"WHERE o.search_vector @@ to_tsquery('english', %s){{bound}}"
        f"{''.join(' AND ' + w for w in where)} ORDER BY o.id DESC LIMIT %s"
    )
    # A selective owner's matches come from the GIN and session indexes intersected, which
    # fetches only theirs: no window is needed, and one would only repeat the intersection.
    window = high - low + 1 if selective else WINDOW_FIRST
    while True:
        whole = high - window < low
        if whole:
            cursor.execute(matches.format(bound=""), [tsquery, *params, want])
        else:
            cursor.execute(
                matches.format(bound=" AND o.id > %s"), [tsquery, high - window, *params, want]
            )
        ids = [row[0] for row in cursor.fetchall()]
        if whole or len(ids) >= want:
            return ids
        # The hit rate so far says how much larger a window holding `want` is (twice that,
        # as rates vary along the table); none at all: the largest step.
        window *= min(WINDOW_GROWTH_MAX, max(4, -(-2 * want // max(1, len(ids)))))


def _selective_owner(cursor: Any, reach: Reach) -> bool:
    """The viewer's readable sessions (their own and those shared with them) are under
    SELECTIVE_SHARE of the sessions (the planner's count of the table, not a scan of it)."""
    sessions, params = reach.sessions_sql()
    cursor.execute(
        f"SELECT (SELECT count(*) FROM ({sessions}) readable), "
        "(SELECT reltuples FROM pg_class WHERE oid = 'memory_session'::regclass)",
        params,
    )
    mine, total = cursor.fetchone()
    return total > 0 and mine < SELECTIVE_SHARE * total


def _ranked(
    cursor: Any, query: SearchQuery, kind: Kind, tsquery: str, window: int
) -> tuple[str, list[Any]] | None:
    """The candidates' rank (ts_rank, weighted by currency for observations), best first."""
    ids = _candidates(cursor, query, kind, tsquery, max(RANK_FLOOR, window))
    if not ids:
        return None
    spec = KINDS[kind]
    rank = _RANK + (f" * {hybrid.rank_weight_sql('o')}" if kind == "observation" else "")
    sql = (
        f"SELECT {_columns(spec, rank)}, '' "
        f"FROM {spec.table} {spec.join} CROSS JOIN to_tsquery('english', %s) AS q(q) "
        f"WHERE o.id = ANY(%s) ORDER BY 6 DESC, o.created DESC, o.id DESC LIMIT %s"
    )
    return sql, [tsquery, ids, window]


def _paths(raw: object) -> list[str]:
    # Django loads jsonb as text on psycopg 3 (JSONField decodes it); raw cursors see that text.
    values = json.loads(raw) if isinstance(raw, str) else raw
    # At most three, modified first, as on SQLite: the hit is an index entry, not the row.
    return list(dict.fromkeys(str(v) for v in values))[:3] if isinstance(values, list) else []


def _headlines(kind: Kind, ids: list[int], tsquery: str) -> dict[int, str]:
    spec = KINDS[kind]
    sql = (
        f"SELECT o.id, ts_headline('english', {spec.headline_text}, to_tsquery('english', %s), %s) "
        f"FROM {spec.table} {spec.join} WHERE o.id = ANY(%s)"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [tsquery, HEADLINE_OPTIONS, ids])
        return {row[0]: " ".join(row[1].split()) for row in cursor.fetchall()}


def _run(query: SearchQuery, tsquery: str) -> list[SearchHit]:
    window = query.offset + query.limit
    hits: list[SearchHit] = []
    with connection.cursor() as cursor:
        for kind in KINDS:
            if not query.wants(kind):
                continue
            if tsquery:
                statement = _ranked(cursor, query, kind, tsquery, window)
                if statement is None:
                    continue
                sql, params = statement
            else:
                sql, params = _select(query, kind, window)
            cursor.execute(sql, params)
            for (
                pk,
                title,
                project,
                created,
                type_,
                score,
                tokens,
                session,
                files,
                status,
                superseded_by,
                certainty,
                origin,
                person_edited,
                demoted,
                snippet,
            ) in cursor.fetchall():
                hits.append(
                    SearchHit(
                        id=pk,
                        kind=kind,
                        title=title or "",
                        project=project,
                        created_at=created,
                        type=type_,
                        score=float(score),
                        tokens=int(tokens),
                        session=session,
                        files=_paths(files),
                        snippet=snippet or "",
                        status=status,
                        superseded_by=superseded_by,
                        certainty=certainty,
                        origin=origin,
                        person_edited=bool(person_edited),
                        demoted=bool(demoted),
                    )
                )
    return hits


def search_postgres(query: SearchQuery) -> list[SearchHit]:
    """Ranked hits for `query`, best first; newest first when there is no text.

    1. Read the text into terms (no text: filters only, newest first).
    2. Per wanted kind, the best `offset + limit` rows holding every term (GIN index,
       ts_rank over a bounded window of the newest matches: `_candidates`); when none does
       and there are several terms, rows holding any of them.
    3. Merge the kinds by score, then recency; cut the page.
    4. Headlines for the page's rows only (ts_headline re-parses the text).
    """
    page, tsquery = _page(query)
    if not tsquery:
        return page
    snippets: dict[tuple[Kind, int], str] = {}
    for kind in KINDS:
        ids = [h.id for h in page if h.kind == kind]
        if ids:
            snippets.update(
                {(kind, pk): text for pk, text in _headlines(kind, ids, tsquery).items()}
            )
    return [replace(hit, snippet=snippets.get((hit.kind, hit.id), hit.snippet)) for hit in page]


def _page(query: SearchQuery) -> tuple[list[SearchHit], str]:
    """Steps 1-3 of `search_postgres`: the page without headlines, and the tsquery that
    found it ("" when the text had none)."""
    query = replace(query, offset=max(0, query.offset), limit=max(0, query.limit))
    if query.limit == 0:
        return [], ""
    terms = tsquery_terms(query.text)
    if query.text.strip() and not terms:
        return [], ""  # only punctuation: nothing that could match
    if not terms:
        hits = _run(query, "")
        hits.sort(key=lambda hit: (hit.created_at, hit.id), reverse=True)
        return hits[query.offset : query.offset + query.limit], ""
    tsquery = " & ".join(terms)
    hits = _run(query, tsquery)
    if not hits and len(terms) > 1:
        # Natural-language questions rarely have every word in one row: widen to any word.
        tsquery = " | ".join(terms)
        hits = _run(query, tsquery)
    hits.sort(key=lambda hit: (hit.score, hit.created_at), reverse=True)
    return hits[query.offset : query.offset + query.limit], tsquery


def hits_by_ids(page: list[tuple[float, Kind, int]], text: str) -> list[SearchHit]:
    """Hits for rows found by vector (hybrid/semantic); headlines mark the query's words."""
    terms = tsquery_terms(text)
    tsquery = " | ".join(terms)
    found: dict[tuple[Kind, int], SearchHit] = {}
    with connection.cursor() as cursor:
        for kind in KINDS:
            ids = [pk for _, k, pk in page if k == kind]
            if not ids:
                continue
            spec = KINDS[kind]
            cursor.execute(
                f"SELECT o.id, {spec.title}, {spec.project}, o.created, {spec.type}, {spec.tokens}, "
                f"{spec.session}, {spec.files}, {spec.curation}, {spec.fallback_snippet} "
                f"FROM {spec.table} {spec.join} "
                "WHERE o.id = ANY(%s)",
                [ids],
            )
            headlines = _headlines(kind, ids, tsquery) if tsquery else {}
            for (
                pk, title, project, created, type_, tokens, session, files,
                status, superseded_by, certainty, origin, person_edited, demoted, snippet,
            ) in cursor:  # fmt: skip
                found[(kind, pk)] = SearchHit(
                    id=pk, kind=kind, title=title or "", project=project, created_at=created,
                    type=type_, tokens=int(tokens), session=session, files=_paths(files),
                    snippet=headlines.get(pk) or snippet or "", status=status,
                    superseded_by=superseded_by, certainty=certainty, origin=origin,
                    person_edited=bool(person_edited), demoted=bool(demoted),
                )  # fmt: skip
    return [
        replace(found[(kind, pk)], score=score) for score, kind, pk in page if (kind, pk) in found
    ]


def _scope(kind: Kind, query: SearchQuery, bound: int) -> tuple[str, list[Any]] | None:
    """SQL for the ids of the newest `bound` rows of `kind` passing the query's filters (the
    keyword search's own `_filters`), or None when nothing filters this kind. The session
    index may serve an owner here: this scan runs when the index walk found too few rows,
    which is when the owner's rows are few (a filter alone would read the table for them)."""
    spec = KINDS[kind]
    where, params = _filters(query, kind, spec, owner_index=True)
    if not where:
        return None
    return (
        f"SELECT o.id FROM {spec.table} {spec.join} WHERE {' AND '.join(where)} "
        "ORDER BY o.id DESC LIMIT %s",
        [*params, bound],
    )


def _allowed(kind: Kind, query: SearchQuery) -> tuple[str, list[Any]] | None:
    """SQL for the ids of `kind` passing the query's filters, unbounded, open to one more
    `AND` (pgvector's scoped index walk narrows it to the walk's rows); None when nothing
    filters this kind."""
    spec = KINDS[kind]
    where, params = _filters(query, kind, spec)
    if not where:
        return None
    return f"SELECT o.id FROM {spec.table} {spec.join} WHERE {' AND '.join(where)}", params


def allowed_ids(kind: Kind, query: SearchQuery, bound: int) -> set[int]:
    """Ids of the newest `bound` rows of `kind` passing the query's filters."""
    spec = KINDS[kind]
    sql, params = _scope(kind, query, bound) or (
        f"SELECT o.id FROM {spec.table} ORDER BY o.id DESC LIMIT %s",
        [bound],
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {row[0] for row in cursor.fetchall()}


def nearest(
    kind: Kind, query: SearchQuery, model: str, vector: Any, k: int, candidates: list[int]
) -> list[tuple[float, int]]:
    """pgvector where migrate installed it; else the fallback: the newest
    FALLBACK_SCAN_BOUND vectors (or, with filters, the rows they select) scanned in memory,
    plus the keyword candidates' own vectors, so a keyword match older than the bound is
    still scored by meaning.

    The status filter alone does not make the fallback a filtered scan (every current id
    read first): the bounded scan's nearest 2k are read and the rows no longer true
    dropped, and only when that leaves fewer than k of a longer list does the filtered
    scan run (as on SQLite)."""
    scope = _scope(kind, query, hybrid.FILTER_SCAN_BOUND)
    found = pgvector.nearest(
        kind, model, vector, k=k, scope=scope, min_score=hybrid.MIN_SIMILARITY,
        allowed=_allowed(kind, query),
    )  # fmt: skip
    if found is not None:
        return found
    if scope is not None and kind == "observation" and query.current_only:
        unfiltered = replace(query, status="all")
        if _scope(kind, unfiltered, 1) is None:
            near = _fallback_scan(kind, unfiltered, model, vector, 2 * k, candidates)
            current = _current_ids([pk for _, pk in near])
            kept = [(score, pk) for score, pk in near if pk in current]
            if len(kept) >= k or len(near) < 2 * k:
                return kept[:k]
    return _fallback_scan(kind, query, model, vector, k, candidates)


def _current_ids(ids: list[int]) -> set[int]:
    if not ids:
        return set()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM memory_observation WHERE id = ANY(%s) AND status = %s",
            [ids, "current"],
        )
        return {row[0] for row in cursor.fetchall()}


def _fallback_scan(
    kind: Kind, query: SearchQuery, model: str, vector: Any, k: int, candidates: list[int]
) -> list[tuple[float, int]]:
    scope = _scope(kind, query, hybrid.FILTER_SCAN_BOUND)
    if scope is not None:
        scan = index.nearest_of(
            kind, model, vector, sorted(allowed_ids(kind, query, hybrid.FILTER_SCAN_BOUND)), k=k,
            min_score=hybrid.MIN_SIMILARITY,
        )  # fmt: skip
    else:
        scan = index.nearest(
            kind,
            model,
            vector,
            k=k,
            bound=hybrid.FALLBACK_SCAN_BOUND,
            min_score=hybrid.MIN_SIMILARITY,
        )
    seen = {pk for _, pk in scan}
    ids, vectors = index.vectors_of(kind, model, [pk for pk in candidates if pk not in seen])
    if len(ids) and vectors.shape[1] == vector.shape[0]:
        scores = vectors @ vector
        scan += [
            (float(s), int(pk))
            for s, pk in zip(scores, ids, strict=True)
            if s > hybrid.MIN_SIMILARITY
        ]
    scan.sort(key=lambda row: row[0], reverse=True)
    return scan[:k]


def term_coverage(rows: list[tuple[Kind, int]], text: str) -> float:
    """`hybrid.Backend.term_coverage`: per kind, one read of the rows' tsvectors, each
    content word's tsquery tested against them."""
    terms = [t for raw in content_terms(fts_terms(text)) for t in tsquery_terms(raw)]
    if not terms or not rows:
        return 1.0
    held: list[int] = []
    for kind in dict.fromkeys(kind for kind, _ in rows):
        tests = ", ".join("(o.search_vector @@ to_tsquery('english', %s))::int" for _ in terms)
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT {tests} FROM {KINDS[kind].table} WHERE o.id = ANY(%s)",
                [*terms, [pk for k, pk in rows if k == kind]],
            )
            held += [sum(row) for row in cursor.fetchall()]
    return max(held, default=0) / len(terms)


class PostgresBackend:
    """The PostgreSQL side of `hybrid.search_mode`."""

    keyword = staticmethod(search_postgres)

    @staticmethod
    def keyword_ranked(query: SearchQuery) -> tuple[list[tuple[float, Kind, int]], bool]:
        # No headlines: the fused page's are made by `hits_by_ids` (ts_headline re-parses
        # each row's text, and this list is CANDIDATES deep). Strictness is not reported by
        # this backend, so its keyword list always weighs in full.
        page, _ = _page(query)
        return [(h.score, h.kind, h.id) for h in page], True

    hits_by_ids = staticmethod(hits_by_ids)
    nearest = staticmethod(nearest)
    term_coverage = staticmethod(term_coverage)
