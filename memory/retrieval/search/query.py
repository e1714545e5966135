"""The search query model and the helpers both backends share.

`SearchQuery` in, `SearchHit` rows out: the SQLite backend (`sqlite.py`) and the
PostgreSQL one (`postgres.py`) import this module and nothing of each other; `service.py`
dispatches between them and fuses keyword with vector ranks (`hybrid.py`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

Kind = Literal["observation", "summary", "prompt"]
KINDS: tuple[Kind, ...] = ("observation", "summary", "prompt")
# keyword: FTS5/tsvector only; semantic: vectors only; hybrid: both, fused by rank.
Mode = Literal["keyword", "semantic", "hybrid"]
MODES: tuple[Mode, ...] = ("hybrid", "keyword", "semantic")

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
    # The surfaces (API, MCP, `cmem search`, the search page) default to hybrid; internal
    # callers that select rows to act on (forget, the timeline filter) keep keyword.
    mode: Mode = "keyword"
    # Team mode: only rows of this user's sessions. Set by `search()` from the request's
    # viewer (memory/team/scope.py), never by a caller, so no surface can forget it.
    owner: int | None = None

    def wants(self, kind: Kind) -> bool:
        if kind not in self.kinds:
            return False
        # Type, concept and file filters only make sense for observations.
        return kind == "observation" or not (self.types or self.concept or self.file)

    @property
    def filtered(self) -> bool:
        return bool(
            self.project
            or self.types
            or self.concept
            or self.file
            or self.since
            or self.until
            or self.owner is not None
        )


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


SNIPPET_TOKENS = 16


def file_match_params(file: str) -> list[str]:
    """Parameters of the by-file match (SQLite and PostgreSQL): (path, LIKE suffix, path) for
    each of the three places a path is stored (ObservationFile, files_modified, files_read)."""
    path = file.strip().removeprefix("./")
    suffix = "%/" + path.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return [path, suffix, path] * 3


def as_datetime(value: Any) -> datetime:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def hit_files(*raw: Any) -> list[str]:
    files: list[str] = []
    for value in raw:
        items = json.loads(value) if isinstance(value, str) else value
        for item in items or []:
            if isinstance(item, str) and item not in files:
                files.append(item)
    return files[:3]


def query_words(terms: str) -> list[str]:
    """The words of the FTS terms, cut to a stem-like prefix so `connections` marks `connection`."""
    words = []
    for word in re.findall(r"\w+", terms.lower()):
        if word in {"or"} or word in STOPWORDS:
            continue
        words.append(word[: max(4, len(word) - 3)] if len(word) > 5 else word)
    return list(dict.fromkeys(words))


def highlight(text: str, words: list[str], *, width: int = SNIPPET_TOKENS) -> str:
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
