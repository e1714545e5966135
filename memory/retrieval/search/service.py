"""One search service over observations, summaries and prompts.

`search(query)` is the only entry point; it dispatches on the database vendor: SQLite uses
the FTS5 external-content tables of migrations 0002/0005 (bm25 ranking), PostgreSQL
uses `memory/retrieval/search/postgres.py` (team mode). Both return the same `SearchHit` rows, so the
API, the pages and the MCP server never know which backend answered.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

Kind = Literal["observation", "summary", "prompt"]
KINDS: tuple[Kind, ...] = ("observation", "summary", "prompt")

# highlight() and ts_headline wrap matches in these private-use characters (never in real
# text); SearchHit turns them into character offsets, so no marker reaches JSON, MCP text or
# HTML (the page renders the offsets as <mark>).
HIGHLIGHT_OPEN = "\ue000"
HIGHLIGHT_CLOSE = "\ue001"


def marks_split(marked: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """`a \ue000b\ue001 c` -> ("a b c", ((2, 3),)): the plain text and its [start, end)
    match offsets, in characters (Unicode code points) of the plain text."""
    plain: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    start: int | None = None
    for char in marked:
        if char == HIGHLIGHT_OPEN:
            start = length
        elif char == HIGHLIGHT_CLOSE:
            if start is not None and length > start:
                spans.append((start, length))
            start = None
        else:
            plain.append(char)
            length += 1
    return "".join(plain), tuple(spans)


@dataclass(frozen=True)
class SearchQuery:
    """What to look for. Empty `text` means "filters only, newest first"."""

    text: str = ""
    project: str | None = None
    kinds: tuple[Kind, ...] = KINDS
    # Observation types (bugfix, feature, …); summaries and prompts are dropped when set.
    types: tuple[str, ...] = ()
    # A concept the observation carries (exact, case-insensitive); observations only.
    concept: str | None = None
    # A file path or a suffix of one (`models.py`, `memory/models.py`); observations only.
    file: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 20
    offset: int = 0

    def wants(self, kind: Kind) -> bool:
        if kind not in self.kinds:
            return False
        # Type, concept and file filters only make sense for observations.
        return kind == "observation" or not (self.types or self.concept or self.file)


@dataclass(frozen=True)
class SearchHit:
    """One result, index-first: enough to decide whether to fetch it, and what it costs."""

    id: int
    kind: Kind
    title: str
    project: str
    created_at: datetime
    # Observation type, or "summary" / "prompt".
    type: str
    # Higher is better, comparable across kinds of one search only.
    score: float = 0.0
    # The matching passage, plain text (built with HIGHLIGHT_OPEN/CLOSE around the matches;
    # __post_init__ moves them into `highlights`).
    snippet: str = ""
    # Roughly what fetching the full row costs the agent.
    tokens: int = 0
    session: int | None = None
    files: list[str] = field(default_factory=list)
    # [start, end) character offsets of the matches in `snippet`.
    highlights: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        if HIGHLIGHT_OPEN in self.snippet or HIGHLIGHT_CLOSE in self.snippet:
            plain, spans = marks_split(self.snippet)
            object.__setattr__(self, "snippet", plain)
            object.__setattr__(self, "highlights", spans)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "title": self.title,
            "project": self.project,
            "created_at": self.created_at.isoformat(),
            "type": self.type,
            "score": round(self.score, 4),
            "snippet": self.snippet,
            "highlights": [list(span) for span in self.highlights],
            "tokens": self.tokens,
            "session": self.session,
            "files": self.files,
        }


def search(query: SearchQuery) -> list[SearchHit]:
    """Ranked hits for `query`, best first (newest first without text)."""
    from django.db import connection

    if connection.vendor == "postgresql":
        from memory.retrieval.search.postgres import search_postgres

        return search_postgres(query)
    return search_sqlite(query)


# --- query text ------------------------------------------------------------------------

# A phrase in double quotes, or a run of anything else up to whitespace or a quote.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "not",
        "of",
        "on",
        "or",
        "our",
        "so",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)
_TOKEN = re.compile(r'"([^"]*)"|([^\s"]+)')
_MAX_TERMS = 32


def fts_terms(text: str) -> list[str]:
    """The user's text as FTS5 terms, each quoted so no character is ever an operator.

    Deliberate interpretation, because any text a user types must be a valid query:
    `"a phrase"` stays a phrase, a trailing `*` on a word is a prefix search, and everything
    else (`- . : ( ) ^ AND OR NOT NEAR`) is literal text, which the tokenizer then splits
    the same way it split the stored text (`foo.bar` → the phrase "foo bar").
    """
    # Lone surrogates cannot reach SQLite as UTF-8; HTTP cannot carry them either.
    # FTS5 reads the query as a C string: a NUL would end it inside a quoted term.
    text = text.encode("utf-8", "replace").decode("utf-8").replace("\0", " ")
    terms: list[str] = []
    for match in _TOKEN.finditer(text):
        phrase, word = match.group(1), match.group(2)
        raw = phrase if phrase is not None else word
        prefix = word is not None and word.endswith("*")
        raw = raw.strip("*") if word is not None else raw
        # Terms without a letter or digit index nothing; keeping them only risks errors.
        if not any(ch.isalnum() for ch in raw):
            continue
        quoted = '"' + raw.replace('"', '""') + '"'
        terms.append(quoted + "*" if prefix else quoted)
        if len(terms) == _MAX_TERMS:
            break
    return terms


# --- SQLite backend ----------------------------------------------------------------------

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
_SNIPPET_TOKENS = 16


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


def _common_filters(query: SearchQuery, *, project_col: str | None, created_col: str) -> _Sql:
    """Row-level filters; project_col None when the FTS tag already filters the project."""
    from django.db import connection

    sql = _Sql()
    if query.project and project_col:
        sql.add(f"{project_col} = %s", query.project)
    if query.since:
        sql.add(f"{created_col} >= %s", connection.ops.adapt_datetimefield_value(query.since))
    if query.until:
        sql.add(f"{created_col} <= %s", connection.ops.adapt_datetimefield_value(query.until))
    return sql


def file_match_params(file: str) -> list[str]:
    """Parameters of the by-file match (SQLite and PostgreSQL): (path, LIKE suffix, path) for
    each of the three places a path is stored (ObservationFile, files_modified, files_read)."""
    path = file.strip().removeprefix("./")
    suffix = "%/" + path.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return [path, suffix, path] * 3


def _observation_filters(query: SearchQuery, *, in_fts: bool) -> _Sql:
    sql = _common_filters(
        query, project_col=None if in_fts else "o.project", created_col="o.created"
    )
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


_OBS_COLUMNS = (
    "o.id, o.title, o.project, o.created, o.type, o.session_id, o.files_modified, o.files_read, "
    "(length(o.title) + length(o.subtitle) + length(o.narrative) + length(o.facts) + 3) / 4 + 20"
)
_SUMMARY_TITLE = (
    "substr(coalesce(nullif(s.request, ''), nullif(s.completed, ''), s.learned), 1, 160)"
)
_SUMMARY_COLUMNS = (
    f"s.id, {_SUMMARY_TITLE}, s.project, s.created, 'summary', s.session_id, '[]', '[]', "
    "(length(s.request) + length(s.investigated) + length(s.learned) + length(s.completed) "
    "+ length(s.next_steps) + length(s.notes) + 3) / 4 + 20"
)
_PROMPT_COLUMNS = "p.id, substr(p.text, 1, 160), ss.project, p.created, 'prompt', p.session_id, '[]', '[]', (length(p.text) + 3) / 4 + 10"


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


def _filters(kind: Kind, query: SearchQuery, *, in_fts: bool = False) -> _Sql:
    """Row-level filters. `in_fts`: project and type are left out, because the FTS query
    already filters them through the tags of migration 0005 (prompts have no tag)."""
    if kind == "observation":
        return _observation_filters(query, in_fts=in_fts)
    if kind == "summary":
        return _common_filters(
            query, project_col=None if in_fts else "s.project", created_col="s.created"
        )
    return _common_filters(query, project_col="ss.project", created_col="p.created")


def _hit(kind: Kind, row: tuple[Any, ...], score: float, snippet: str) -> SearchHit:
    return SearchHit(
        id=row[0], kind=kind, title=row[1] or "", project=row[2], created_at=_as_datetime(row[3]), type=row[4],
        session=row[5], files=_files(row[6], row[7]), tokens=int(row[8]), score=score, snippet=snippet or "",
    )  # fmt: skip


def _as_datetime(value: Any) -> datetime:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _files(*raw: Any) -> list[str]:
    files: list[str] = []
    for value in raw:
        items = json.loads(value) if isinstance(value, str) else value
        for item in items or []:
            if isinstance(item, str) and item not in files:
                files.append(item)
    return files[:3]


def _recent(kind: Kind, query: SearchQuery) -> list[SearchHit]:
    """No text: the newest rows that pass the filters."""
    from django.db import connection

    k, filters = _KIND_SQL[kind], _filters(kind, query)
    sql = (
        f"SELECT {k.columns}, {k.fallback_snippet} FROM {k.table} {k.alias}{k.join} WHERE 1 = 1{filters.sql} "
        f"ORDER BY {k.alias}.created DESC, {k.alias}.id DESC LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*filters.params, query.limit + query.offset])
        return [_hit(kind, row[:9], 0.0, row[9]) for row in cursor.fetchall()]


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


def _ranked(kind: Kind, query: SearchQuery, terms: str) -> list[tuple[float, Kind, int]]:
    """(score, kind, id) of the best matches among the newest RANK_WINDOW of this kind,
    ranked by bm25 alone: the doclists carry all it needs, no row is read."""
    from django.db import connection

    k, filters = _KIND_SQL[kind], _filters(kind, query, in_fts=True)
    # CROSS JOIN keeps the FTS table as the outer loop, so rowid order comes from the index.
    join = (
        f" CROSS JOIN {k.table} {k.alias} ON {k.alias}.id = {k.fts}.rowid{k.join}"
        if filters.where
        else ""
    )
    rank_sql = (
        f"SELECT rowid, score FROM (SELECT {k.fts}.rowid AS rowid, -bm25({k.fts}, {k.weights}) AS score "
        f"FROM {k.fts}{join} WHERE {k.fts} MATCH %s{filters.sql} ORDER BY {k.fts}.rowid DESC LIMIT {RANK_WINDOW}) "
        f"ORDER BY score DESC LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            rank_sql,
            [f"({terms}){_fts_filters(kind, query)}", *filters.params, query.limit + query.offset],
        )
        return [(float(score), kind, int(pk)) for pk, score in cursor.fetchall()]


def _hydrate(page: list[tuple[float, Kind, int]], terms: str) -> list[SearchHit]:
    """Columns for the page returned (one primary-key read per kind) and a snippet each.

    Not FTS5's snippet(): it needs the MATCH again, and re-running a prefix query per row
    cost 70 ms at 100k rows; highlighting the page in Python costs well under one.
    """
    from django.db import connection

    words = _query_words(terms)
    found: dict[tuple[Kind, int], SearchHit] = {}
    with connection.cursor() as cursor:
        for kind in KINDS:
            scores = {pk: score for score, k_, pk in page if k_ == kind}
            if not scores:
                continue
            k = _KIND_SQL[kind]
            ids = ", ".join(str(pk) for pk in scores)
            cursor.execute(
                f"SELECT {k.columns}, {k.snippet_source} FROM {k.table} {k.alias}{k.join} WHERE {k.alias}.id IN ({ids})"
            )
            for row in cursor.fetchall():
                found[(kind, row[0])] = _hit(
                    kind, row[:9], scores[row[0]], highlight(row[9] or "", words)
                )
    # A row deleted between the two reads simply drops out.
    return [found[(kind, pk)] for _, kind, pk in page if (kind, pk) in found]


def _query_words(terms: str) -> list[str]:
    """The words of the FTS terms, cut to a stem-like prefix so `connections` marks `connection`."""
    words = []
    for word in re.findall(r"\w+", terms.lower()):
        if word in {"or"} or word in STOPWORDS:
            continue
        words.append(word[: max(4, len(word) - 3)] if len(word) > 5 else word)
    return list(dict.fromkeys(words))


def highlight(text: str, words: list[str], *, width: int = _SNIPPET_TOKENS) -> str:
    """About `width` words of `text` around its densest run of matches, matches between HIGHLIGHT_OPEN and HIGHLIGHT_CLOSE."""
    tokens = text.replace('", "', " · ").replace('["', "").replace('"]', "").split()
    if not tokens or not words:
        return " ".join(tokens[:width])
    pattern = re.compile(
        r"(?<!\w)(" + "|".join(re.escape(w) for w in words) + r")\w*", re.IGNORECASE
    )
    hits = [i for i, token in enumerate(tokens) if pattern.search(token)]
    if not hits:
        return " ".join(tokens[:width])
    best = max(hits, key=lambda i: sum(1 for h in hits if i <= h < i + width))
    start = max(0, min(best - 2, len(tokens) - width))
    window = [
        pattern.sub(lambda m: f"{HIGHLIGHT_OPEN}{m.group(0)}{HIGHLIGHT_CLOSE}", t)
        for t in tokens[start : start + width]
    ]
    return (
        ("… " if start else "") + " ".join(window) + (" …" if start + width < len(tokens) else "")
    )


def search_sqlite(query: SearchQuery) -> list[SearchHit]:
    """FTS5 search: all terms must match; when nothing does, any term may (ranked by bm25).
    Each kind is ranked on its own, the results merged by score, and only the page returned
    is read and highlighted."""
    kinds = [kind for kind in KINDS if query.wants(kind)]
    terms = fts_terms(query.text)
    if query.text.strip() and not terms:
        return []  # only punctuation: nothing that could match
    if not terms:
        hits = [hit for kind in kinds for hit in _recent(kind, query)]
        hits.sort(key=lambda hit: (hit.created_at, hit.id), reverse=True)
        return hits[query.offset : query.offset + query.limit]
    match = " ".join(terms)
    ranked = [row for kind in kinds for row in _ranked(kind, query, match)]
    if not ranked and len(terms) > 1:
        # Natural-language questions rarely have every word in one row: widen to any word
        # but the filler ones (which match everything); bm25 ranks rows holding more, and
        # rarer, words first.
        words = [term for term in terms if term.strip('"*').lower() not in STOPWORDS] or terms
        match = " OR ".join(words)
        ranked = [row for kind in kinds for row in _ranked(kind, query, match)]
    # Equal scores: the newer row (higher id) first.
    ranked.sort(key=lambda row: (row[0], row[2]), reverse=True)
    return _hydrate(ranked[query.offset : query.offset + query.limit], match)
