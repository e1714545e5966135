"""The search query model and the helpers both backends share.

`SearchQuery` in, `SearchHit` rows out: the SQLite backend (`sqlite.py`) and the
PostgreSQL one (`postgres.py`) import this module and nothing of each other; `service.py`
dispatches between them and fuses keyword with vector ranks (`hybrid.py`).
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from memory.models import row_tags

Kind = Literal["observation", "summary", "prompt"]
KINDS: tuple[Kind, ...] = ("observation", "summary", "prompt")
# keyword: FTS5/tsvector only; semantic: vectors only; hybrid: both, fused by rank.
Mode = Literal["keyword", "semantic", "hybrid"]
MODES: tuple[Mode, ...] = ("hybrid", "keyword", "semantic")
# current: only observations still true (the default of every surface); all: the wrong,
# outdated, superseded, abandoned and retired ones too, labelled and ranked after.
StatusFilter = Literal["current", "all"]
STATUS_FILTERS: tuple[StatusFilter, ...] = ("current", "all")

# highlight() and ts_headline wrap matches in these private-use characters (never in real
# text); SearchHit turns them into character offsets, so no marker reaches JSON, MCP text or
# HTML (the page renders the offsets as <mark>).
HIGHLIGHT_OPEN = "\ue000"
HIGHLIGHT_CLOSE = "\ue001"


_MARK = re.compile(f"[{HIGHLIGHT_OPEN}{HIGHLIGHT_CLOSE}]")


def marks_split(marked: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """`a \ue000b\ue001 c` -> ("a b c", ((2, 3),)): the plain text and its [start, end)
    match offsets, in characters (Unicode code points) of the plain text.

    One pass over the markers only (a regex finds them), not over every character."""
    spans: list[tuple[int, int]] = []
    removed = 0
    start: int | None = None
    for found in _MARK.finditer(marked):
        at = found.start() - removed  # the marker's position in the plain text
        removed += 1
        if found.group() == HIGHLIGHT_OPEN:
            start = at
        else:
            if start is not None and at > start:
                spans.append((start, at))
            start = None
    if not removed:
        return marked, ()
    return _MARK.sub("", marked), tuple(spans)


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
    # Team mode: the (owner id, project) pairs teammates shared with `owner`, whose rows it
    # reads too (memory/team/sharing.py). Set by `search()` with `owner`.
    shared: tuple[tuple[int, str], ...] = ()
    # Observations only: "current" leaves out rows no longer true (memory/curation/);
    # callers that select rows to act on whatever their status (forget) pass "all".
    status: StatusFilter = "current"

    @property
    def current_only(self) -> bool:
        return self.status == "current" and "observation" in self.kinds

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
    # Curation (observations; summaries and prompts are always current, unknown certainty).
    status: str = "current"
    superseded_by: int | None = None
    certainty: str = ""
    origin: str = "observer"
    person_edited: bool = False
    demoted: bool = False
    # Team mode: the username of a teammate whose shared row this is ("" for one's own).
    author: str = ""

    @property
    def tags(self) -> list[str]:
        """How current the row is and who wrote it (`currency_tags`)."""
        return row_tags(self)

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
            "status": self.status,
            "tags": self.tags,
            "superseded_by": self.superseded_by,
            "author": self.author,
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


def content_terms(terms: list[str]) -> list[str]:
    """`fts_terms` without the filler words (which every row holds); all of them when the
    text is nothing but filler."""
    return [term for term in terms if term.strip('"*').lower() not in STOPWORDS] or terms


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
        if value == "[]":
            continue  # most rows have one list empty: no parse (~2 µs a hit)
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


_patterns: dict[tuple[str, ...], tuple[re.Pattern[str], re.Pattern[str]]] = {}


def _highlight_patterns(words: list[str]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(the match as defined: a word's start, case aside; the same for lowercased ASCII
    text, case-sensitive and with `\b` in ASCII mode for the word's start: the lookbehind
    and IGNORECASE keep the regex engine from skipping ahead to a literal, 4x slower on a
    400-character text, and `\b` is faster than checking each candidate in Python)."""
    key = tuple(words)
    found = _patterns.get(key)
    if found is None:
        alternatives = "|".join(re.escape(w) for w in words)
        exact = re.compile(r"(?<!\w)(" + alternatives + r")\w*", re.IGNORECASE)
        lowered = re.compile(r"\b(?:" + alternatives.lower() + r")\w*", re.ASCII)
        if len(_patterns) > 256:
            _patterns.clear()
        found = _patterns[key] = (exact, lowered)
    return found


def _match_spans(text: str, words: list[str], ascii_text: bool) -> list[tuple[int, int]]:
    """[start, end) of each match in `text`: a word of `words` at a word's start, case
    aside, running on to the word's end. `ascii_text`: `text` is ASCII but for the
    separator " · " (no word character, no case: lowercasing and matching leave it be)."""
    exact, lowered = _highlight_patterns(words)
    if not (ascii_text and all(w.isascii() for w in words)):
        return [found.span() for found in exact.finditer(text)]
    # ASCII: lower() keeps every position, and a case-insensitive match is a match of the
    # lowercased text. Every word starts with a word character (`query_words`), so `\b`
    # before it is "not after a word character", as the lookbehind says.
    return [found.span() for found in lowered.finditer(text.lower())]


def _marked(text: str, spans: list[tuple[int, int]]) -> str:
    parts: list[str] = []
    last = 0
    for start, end in spans:
        parts += (text[last:start], HIGHLIGHT_OPEN, text[start:end], HIGHLIGHT_CLOSE)
        last = end
    parts.append(text[last:])
    return "".join(parts)


def highlight(text: str, words: list[str], *, width: int = SNIPPET_TOKENS) -> str:
    """`highlight_spans()` with its matches between HIGHLIGHT_OPEN and HIGHLIGHT_CLOSE."""
    plain, spans = highlight_spans(text, words, width=width)
    return _marked(plain, spans)


def highlight_spans(
    text: str, words: list[str], *, width: int = SNIPPET_TOKENS
) -> tuple[str, list[tuple[int, int]]]:
    """About `width` words of `text` around its densest run of matches, and the [start, end)
    offsets of the matches in it: what `SearchHit` holds, so no marker is written only for
    `marks_split` to take out again (~5 µs a hit).

    The window starts 2 words before the first match of the earliest `width`-word run that
    holds the most matching words. One regex pass over the words joined by single spaces
    finds the matches (a match never spans whitespace, and at a word's start the lookbehind
    sees a space as it would see the start of the word alone), a sliding window finds the
    densest run, and the window's matches are marked; this was a regex search and a
    substitution per word and a count per matching word (~30% of a keyword search).
    """
    ascii_text = text.isascii()
    text = text.replace('", "', " · ").replace('["', "").replace('"]', "")
    tokens = text.split()
    if not tokens or not words:
        return " ".join(tokens[:width]), []
    # The words joined by single spaces: a word's index is the count of spaces before it.
    joined = " ".join(tokens)
    matches = _match_spans(joined, words, ascii_text)
    hits: list[int] = []  # the index of each word holding a match, once each, in order
    index = last = 0
    for start, _ in matches:
        index += joined.count(" ", last, start)
        last = start
        if not hits or hits[-1] != index:
            hits.append(index)
    if not hits:
        return " ".join(tokens[:width]), []
    best, most = hits[0], 0
    for at, first in enumerate(hits):
        ahead = bisect_left(hits, first + width, at)  # the first hit past this run
        if ahead - at > most:
            best, most = first, ahead - at
    start = max(0, min(best - 2, len(tokens) - width))
    plain = " ".join(tokens[start : start + width])
    # The window is joined[begin:end], and its matches are those of the whole text that
    # start in it: a match never spans a space, and the space before the window's first
    # word is, to the lookbehind, what the start of the window alone would be.
    begin = sum(map(len, tokens[:start])) + start
    end = begin + len(plain)
    shift = begin - (2 if start else 0)  # "… " before a window that is not the start
    spans = [(a - shift, b - shift) for a, b in matches if begin <= a < end]
    prefix = "… " if start else ""
    return prefix + plain + (" …" if start + width < len(tokens) else ""), spans
