"""What the pass looks at: a bounded window of each project's current rows, and the groups
worth a second look, found in one linear pass over it.

Nothing here is O(n²) over a table: the window is the newest WINDOW current rows of one
project and one owner (an indexed range read of `obs_project_recent_idx`), rows are
bucketed by (type, files), by normalised title, by topic and by file, and only rows that
share a bucket are ever compared; a bucket compares at most BUCKET_MAX rows pairwise, so a
pass costs about WINDOW × BUCKET_MAX comparisons at worst, whatever the table holds. The
rules that must look further back on a busy file (a reversal against every older decision)
read a per-file index of one kind of row only (`kind_index`, KIND_MAX a key), and only from
their few trigger rows (a decision with reversal words, a row that says a value changed).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from memory.curation.policy import person_owned
from memory.models import Observation, Session
from memory.team import scope

# The newest current rows of one project (and owner) a pass reads.
WINDOW = 2000
# Rows of one bucket compared pairwise (newest first); older ones wait until they are newer
# than the rest of the bucket, which they never are: a bucket this full is a project of
# thousands of rows on one file, where the title buckets still catch the exact repeats.
BUCKET_MAX = 40
# Rows of one kind a rule compares a row with per topic or file (`kind_index`): a rule that
# reads only decisions, or only rows stating a value, looks back this far on one file, well
# past BUCKET_MAX, and still costs at most (its few trigger rows) × KIND_MAX.
KIND_MAX = 400
# Rows of one group shown to the model.
GROUP_MAX = 6

_WORD = re.compile(r"[a-z0-9_]+")
# Words that carry no subject. Negations and hedges are kept: "X is not the cause" must
# never look like a repeat of "X might be the cause".
_STOP = frozenset(
    "a an the and or but of to in on at for from by with as is are was were be been being it "  # noqa: SIM905 - a word list reads better as text
    "its this that these those into onto than then so yes do does did done has have had we i "
    "you they he she them our your their there here when which who what why how can will "
    "shall also just only very more most now py js ts md".split()
)

REVERSAL = re.compile(
    r"\b(instead of|switch(?:ed|ing)? (?:to|from|back)|revert(?:ed|ing|s)?|no longer|"
    r"replac(?:e|ed|ing) \S.{0,60}? with|rather than|moved away from|in favou?r of|"
    r"reversed?|dropp(?:ed|ing) \S.{0,40}? for|went back to)\b",
    re.IGNORECASE,
)
HEDGE = re.compile(
    r"\b(might be|may be|could be|probably|possibly|suspect(?:ed|s)?|likely|perhaps|"
    r"hypothes[ie]s|maybe|seems to be|appears to be|i think)\b",
    re.IGNORECASE,
)
CONTRADICTION = re.compile(
    r"\b(not the cause|(?:was|is)n'?t the cause|ruled out|rules out|was actually|is actually|"
    r"turned out|red herring|not caused by|real cause|actual cause|false alarm|disproved|"
    r"refuted|unrelated to the)\b",
    re.IGNORECASE,
)
CAUSE = re.compile(
    r"\b(?:caused by|root cause(?: was| is)?|the cause (?:was|is)|due to|because(?: of)?)\s+"
    r"(?P<cause>[^.;\n]{3,160})",
    re.IGNORECASE,
)
# Kinds whose hedged wording makes an observer row a hypothesis (a change or feature that
# was made is a fact, however it is phrased).
HEDGED_TYPES = frozenset({"discovery", "bugfix", "decision", "note"})


def tokens(text: str) -> frozenset[str]:
    """Content words, lower-cased, plurals folded: what "near-identical" is measured on."""
    out = set()
    for word in _WORD.findall(text.lower()):
        if len(word) < 2 or word in _STOP:
            continue
        if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.add(word)
    return frozenset(out)


def words(text: str) -> list[str]:
    """Content words in order (as `tokens`), identifiers split at underscores
    ("CARRIER_TIMEOUT_S" -> carrier, timeout): what a subject phrase is matched on."""
    out = []
    for word in _WORD.findall(text.lower()):
        for part in word.split("_"):
            if len(part) < 2 or part in _STOP:
                continue
            if len(part) > 4 and part.endswith("s") and not part.endswith("ss"):
                part = part[:-1]
            out.append(part)
    return out


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def covered(part: frozenset[str], whole: frozenset[str]) -> float:
    """The share of `part`'s words found in `whole`."""
    return len(part & whole) / len(part) if part else 0.0


@dataclass
class Row:
    """One window row, with what every rule reads precomputed once."""

    id: int
    type: str
    title: str
    text: str  # title, subtitle, narrative and facts, joined
    files: frozenset[str]
    topic: str
    created: datetime
    certainty: str
    origin: str
    locked: bool  # a person's row or a pinned one: never a target
    last_recalled: datetime | None = None
    title_tokens: frozenset[str] = field(default=frozenset())
    text_tokens: frozenset[str] = field(default=frozenset())
    title_words: frozenset[str] = field(default=frozenset())  # identifiers split (`words`)
    text_words: frozenset[str] = field(default=frozenset())

    def __post_init__(self) -> None:
        self.title_tokens = tokens(self.title)
        self.text_tokens = tokens(self.text)
        self.title_words = frozenset(words(self.title))
        self.text_words = frozenset(words(self.text))

    @property
    def title_key(self) -> str:
        return " ".join(sorted(self.title_tokens))

    @property
    def hypothesis(self) -> bool:
        if self.certainty == Observation.Certainty.HYPOTHESIS:
            return True
        return (
            not self.certainty
            and self.origin == Observation.Origin.OBSERVER
            and self.type in HEDGED_TYPES
            and HEDGE.search(self.text) is not None
        )


@dataclass
class Window:
    project: str
    owner_id: int | None
    rows: list[Row]  # newest first
    vectors: dict[int, object] = field(default_factory=dict)  # id -> unit numpy vector

    def by_id(self) -> dict[int, Row]:
        return {r.id: r for r in self.rows}

    def cosine(self, a: Row, b: Row) -> float | None:
        va, vb = self.vectors.get(a.id), self.vectors.get(b.id)
        if va is None or vb is None:
            return None
        return float(va @ vb)  # type: ignore[operator]


def windows(*, project: str | None = None) -> Iterable[Window]:
    """The windows of every project (or one) and owner the current viewer may change."""
    sessions = scope.owned(Session.objects.all(), "owner")
    if project:
        sessions = sessions.filter(project=project)
    pairs = sorted(
        set(sessions.values_list("project", "owner_id")), key=lambda p: (p[0], p[1] or 0)
    )
    for name, owner_id in pairs:
        yield window(project=name, owner_id=owner_id)


def window(*, project: str, owner_id: int | None) -> Window:
    rows = (
        Observation.objects.current()
        .filter(project=project, session__owner_id=owner_id)
        .order_by("-created", "-pk")
        .only(
            "pk", "type", "title", "subtitle", "narrative", "facts", "files_read",
            "files_modified", "topic", "created", "certainty", "origin", "person_edited",
            "pinned", "last_recalled",
        )[:WINDOW]
    )  # fmt: skip
    out = [
        Row(
            id=o.pk,
            type=o.type,
            title=o.title,
            text="\n".join([o.title, o.subtitle, o.narrative, *map(str, o.facts or [])]),
            files=frozenset([*(o.files_modified or []), *(o.files_read or [])]),
            topic=o.topic,
            created=o.created,
            certainty=o.certainty,
            origin=o.origin,
            locked=person_owned(o) or o.pinned,
            last_recalled=o.last_recalled,
        )
        for o in rows
    ]
    found = Window(project=project, owner_id=owner_id, rows=out)
    found.vectors = _vectors([r.id for r in out])
    return found


def _vectors(ids: list[int]) -> dict[int, object]:
    """The rows' stored embeddings, when the extra is installed and they exist; never
    required (the token rules decide alone without them)."""
    # the pass runs in the consumer; the embeddings package is imported only when it runs
    from memory.retrieval import embeddings

    if not ids or not embeddings.installed():
        return {}
    # optional dependency (numpy and the model: the embeddings extra)
    from memory.retrieval.embeddings.index import vectors_of
    from memory.retrieval.embeddings.model import model_version

    found, matrix = vectors_of("observation", model_version(), ids)
    return {int(i): matrix[n] for n, i in enumerate(found)}


# -- buckets ----------------------------------------------------------------------------------
def duplicate_buckets(rows: list[Row]) -> list[list[Row]]:
    """Rows that may repeat each other: same type and same files (or none), and separately
    same type, files and normalised title (catches exact repeats past BUCKET_MAX)."""
    by_files: dict[tuple[str, frozenset[str]], list[Row]] = defaultdict(list)
    by_title: dict[tuple[str, frozenset[str], str], list[Row]] = defaultdict(list)
    for row in rows:
        by_files[(row.type, row.files)].append(row)
        if row.title_key:
            by_title[(row.type, row.files, row.title_key)].append(row)
    out = [b[:BUCKET_MAX] for b in by_files.values() if len(b) > 1]
    out += [b[:BUCKET_MAX] for b in by_title.values() if len(b) > 1]
    return out


def clusters(window: Window, same: Callable[[Row, Row, Window], bool]) -> list[list[Row]]:
    """Groups of rows `same` joins (union-find over the pairs inside each duplicate
    bucket), each newest first."""
    parent: dict[int, int] = {}

    def root(i: int) -> int:
        while parent.get(i, i) != i:
            parent[i] = parent.get(parent[i], parent[i])
            i = parent[i]
        return i

    for bucket in duplicate_buckets(window.rows):
        for n, a in enumerate(bucket):
            for b in bucket[n + 1 :]:
                if root(a.id) != root(b.id) and same(a, b, window):
                    parent[root(a.id)] = root(b.id)
    groups: dict[int, list[Row]] = {}
    for row in window.rows:
        groups.setdefault(root(row.id), []).append(row)
    return [g for g in groups.values() if len(g) > 1]


def related_index(rows: list[Row]) -> dict[str, list[Row]]:
    """Rows by topic key (`topic:<key>`) and by file (`file:<path>`), newest first."""
    index: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        if row.topic:
            index[f"topic:{row.topic}"].append(row)
        for path in row.files:
            index[f"file:{path}"].append(row)
    return index


def related(row: Row, index: dict[str, list[Row]]) -> list[Row]:
    """Rows sharing the row's topic or one of its files (newest first, each once, the row
    itself left out), at most BUCKET_MAX per key."""
    seen: dict[int, Row] = {}
    keys = ([f"topic:{row.topic}"] if row.topic else []) + [f"file:{p}" for p in row.files]
    for key in keys:
        for other in index.get(key, [])[:BUCKET_MAX]:
            if other.id != row.id:
                seen.setdefault(other.id, other)
    return sorted(seen.values(), key=lambda r: (r.created, r.id), reverse=True)


def kind_index(rows: list[Row], keep: Callable[[Row], bool]) -> dict[str, list[Row]]:
    """Like `related_index`, of the rows `keep` accepts only, at most KIND_MAX per key."""
    index: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        if not keep(row):
            continue
        keys = ([f"topic:{row.topic}"] if row.topic else []) + [f"file:{p}" for p in row.files]
        for key in keys:
            if len(index[key]) < KIND_MAX:
                index[key].append(row)
    return index


def sharing(row: Row, index: dict[str, list[Row]]) -> list[Row]:
    """The rows of `index` sharing the row's topic or a file: each once, newest first, the
    row itself left out."""
    seen: dict[int, Row] = {}
    keys = ([f"topic:{row.topic}"] if row.topic else []) + [f"file:{p}" for p in row.files]
    for key in keys:
        for other in index.get(key, ()):
            if other.id != row.id:
                seen.setdefault(other.id, other)
    return sorted(seen.values(), key=lambda r: (r.created, r.id), reverse=True)


def newer(a: Row, b: Row) -> bool:
    return (a.created, a.id) > (b.created, b.id)
