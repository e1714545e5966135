"""A realistic memory history labelled by hand, and what consolidation does to its index.

Shared by the bench (`make bench NAME=index_consolidation`, tests/bench/index_consolidation.py)
and its test (tests/curation/test_index_consolidation_bench.py), so the bench cannot rot.

- `catalogue_load()`: the hand-written facts (data/consolidation_history/facts.toml), checked.
- `history_generate()`: a seeded, deterministic history of those facts over ≈40 sessions and
  ten weeks, as an agent's memory grows (files re-read and re-summarised, "tests pass" again
  and again, a decision then its reversal, a guess then what refuted it). Every row keeps its
  fact id here, never in the database: the labels are the bench's, not the product's.
- `history_load()` / `demo_history_load()`: the rows into the database (Django needed).
- `index_measure()`: the SessionStart index before and after a consolidation pass, compared
  with the labels: tokens, rows, current facts lost, stale facts still shown as current.
"""

from __future__ import annotations

import hashlib
import random
import re
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("data") / "consolidation_history"
TYPES = frozenset(
    [
        "bugfix",
        "feature",
        "refactor",
        "change",
        "discovery",
        "decision",
        "security_alert",
        "security_note",
    ]
)
# A row line of the index: its id first (`- #12` for a pinned line); "replaces #N" notes and
# session lines (S12) are not rows shown as current.
_ROW_ID = re.compile(r"^(?:- )?#?(\d+)\b", re.M)
# What an observer adds around the same fact in another session: the words differ a little
# from row to row even when the phrasing is the same.
ASIDES = (
    "Seen again while reviewing the diff.",
    "Re-read before changing the code nearby.",
    "Checked while debugging a failing quote.",
    "Came up again during the session's review.",
    "Looked at this again while writing tests.",
)
ASIDE_CHANCE = 0.35
RECALL_CHANCE = 0.08  # a session fetches an earlier row of a fact (get_observations / search)


class CatalogueError(ValueError):
    """A catalogue that breaks one of its rules (the message says which and where)."""


@dataclass(frozen=True)
class Fact:
    id: str
    type: str
    files: tuple[str, ...]
    days: tuple[int, int]
    weight: int
    phrasings: tuple[tuple[str, str], ...]
    replaces: str = ""


@dataclass(frozen=True)
class Catalogue:
    project: str
    sessions: int
    days: int
    facts: dict[str, Fact]  # in catalogue order

    def stale(self) -> set[str]:
        """Facts another fact replaced: not current."""
        return {f.replaces for f in self.facts.values() if f.replaces}

    def chains(self) -> list[list[str]]:
        """Each fact with everything that replaced it, in catalogue order."""
        head = {}
        for fact in self.facts.values():
            head[fact.id] = head.get(fact.replaces, fact.id) if fact.replaces else fact.id
        out: dict[str, list[str]] = {}
        for fact_id, first in head.items():
            out.setdefault(first, []).append(fact_id)
        return list(out.values())

    def halves(self) -> tuple[list[str], list[str]]:
        """(tuning, held-out): the chains dealt alternately, so a fact and what replaced it
        always land in the same half."""
        tuning: list[str] = []
        held_out: list[str] = []
        for n, chain in enumerate(self.chains()):
            (tuning if n % 2 == 0 else held_out).extend(chain)
        return tuning, held_out


def catalogue_load(path: Path = DATA / "facts.toml") -> Catalogue:
    try:
        raw = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CatalogueError(f"{path.name}: {exc}") from exc
    span = int(raw.get("days", 70))
    facts: dict[str, Fact] = {}
    for n, spec in enumerate(raw.get("facts", [])):
        where = f"{path.name}, fact {n + 1} ({spec.get('id', '?')})"
        fact_id = str(spec.get("id", ""))
        if not fact_id or fact_id in facts:
            raise CatalogueError(f"{where}: needs an id no other fact has")
        if spec.get("type") not in TYPES:
            raise CatalogueError(f"{where}: type must be one of {sorted(TYPES)}")
        days = spec.get("days", [])
        if len(days) != 2 or not 0 <= days[0] <= days[1] < span:
            raise CatalogueError(f"{where}: days must be [first, last] within 0..{span - 1}")
        weight = spec.get("weight")
        if not isinstance(weight, int) or not 1 <= weight <= 10:
            raise CatalogueError(f"{where}: weight must be a whole number 1..10")
        phrasings = spec.get("phrasings", [])
        if not 2 <= len(phrasings) <= 5 or any(
            len(p) != 2 or not all(isinstance(s, str) and s.strip() for s in p) for p in phrasings
        ):
            raise CatalogueError(f"{where}: needs 2-5 phrasings, each [title, text]")
        replaces = str(spec.get("replaces", ""))
        if replaces:
            older = facts.get(replaces)
            if older is None:
                raise CatalogueError(f"{where}: replaces {replaces!r}, not an earlier fact")
            if any(f.replaces == replaces for f in facts.values()):
                raise CatalogueError(f"{where}: {replaces!r} is already replaced by another fact")
            if older.days[1] >= days[0]:
                raise CatalogueError(
                    f"{where}: starts on day {days[0]}, before {replaces!r} is last seen"
                    f" (day {older.days[1]})"
                )
        facts[fact_id] = Fact(
            id=fact_id,
            type=spec["type"],
            files=tuple(str(f) for f in spec.get("files", [])),
            days=(int(days[0]), int(days[1])),
            weight=weight,
            phrasings=tuple((str(t), str(x)) for t, x in phrasings),
            replaces=replaces,
        )
    if not facts:
        raise CatalogueError(f"{path.name}: no [[facts]]")
    return Catalogue(
        project=str(raw.get("project", "project")),
        sessions=int(raw.get("sessions", 40)),
        days=span,
        facts=facts,
    )


# -- generation (pure Python: no database) --------------------------------------------------


@dataclass(frozen=True)
class GenRow:
    fact: str
    type: str
    title: str
    text: str
    files: tuple[str, ...]
    session: int
    at: float  # days since the history began
    recalled_at: float | None = None


@dataclass
class History:
    name: str
    project: str
    span: int  # days
    facts: dict[str, Fact]
    stale: set[str]  # facts of this history another of its facts replaced
    sessions: list[float]  # each session's start, in days
    rows: list[GenRow]

    @property
    def current(self) -> set[str]:
        return {f for f in self.facts if f not in self.stale}


def history_generate(
    catalogue: Catalogue,
    *,
    name: str,
    seed: int,
    fact_ids: list[str] | None = None,
    sessions: int | None = None,
    span: int | None = None,
) -> History:
    """A history of `fact_ids` (all facts by default), the same for the same seed.

    Sessions are spread over the span; in each, every fact active that day is recorded
    again with a chance of weight/5, in one of its phrasings (sometimes with an aside); a
    fact never recorded in its window is recorded once in the first session that reaches
    it. A later session sometimes recalls a fact's newest row (sets its last_recalled).
    """
    rng = random.Random(seed)
    chosen = [catalogue.facts[f] for f in (fact_ids or list(catalogue.facts))]
    span = span or catalogue.days
    scale = span / catalogue.days  # a shorter span squeezes every fact's days
    count = sessions or catalogue.sessions
    starts = sorted(
        (s + rng.uniform(0.0, 0.6)) * span / count + rng.uniform(9, 16) / 24 for s in range(count)
    )
    picked: dict[int, list[Fact]] = {s: [] for s in range(count)}
    for fact in chosen:
        first, last = fact.days[0] * scale, (fact.days[1] + 1) * scale
        active = [s for s, at in enumerate(starts) if first <= at < last]
        seen = [s for s in active if rng.random() < fact.weight / 5]
        if not seen:
            later = [s for s, at in enumerate(starts) if at >= first]
            seen = [(active or later or [count - 1])[0]]
        for s in seen:
            picked[s].append(fact)
    order = {f.id: n for n, f in enumerate(catalogue.facts.values())}
    rows: list[GenRow] = []
    newest: dict[str, int] = {}  # fact -> index of its newest row so far
    recalled: dict[int, float] = {}
    for s, at in enumerate(starts):
        # A session recalls some facts it has rows of (before recording anything new).
        for _fact, index in sorted(newest.items()):
            if rng.random() < RECALL_CHANCE:
                recalled[index] = at
        minute = 0.0
        for fact in sorted(picked[s], key=lambda f: order[f.id]):
            title, text = rng.choice(fact.phrasings)
            if rng.random() < ASIDE_CHANCE:
                text = f"{text} {rng.choice(ASIDES)}"
            minute += rng.uniform(2, 6)
            newest[fact.id] = len(rows)
            rows.append(GenRow(fact.id, fact.type, title, text, fact.files, s, at + minute / 1440))
    rows = [GenRow(**{**r.__dict__, "recalled_at": recalled.get(n)}) for n, r in enumerate(rows)]
    ids = {f.id for f in chosen}
    stale = {f.replaces for f in chosen if f.replaces in ids}
    history = History(name, catalogue.project, span, {f.id: f for f in chosen}, stale, starts, rows)
    _check_order(history)
    return history


def _check_order(history: History) -> None:
    """A replaced fact's rows all come before the first row of what replaced it."""
    for fact in history.facts.values():
        if fact.replaces not in history.facts:
            continue
        old = [r.at for r in history.rows if r.fact == fact.replaces]
        new = [r.at for r in history.rows if r.fact == fact.id]
        if old and new and max(old) >= min(new):
            raise CatalogueError(
                f"{fact.id}: a row of {fact.replaces!r} comes after it; give {fact.id!r} later"
                " days or the history more sessions"
            )


# -- the database (Django set up by the caller) ---------------------------------------------


@dataclass
class Loaded:
    name: str
    project: str
    root: str
    labels: dict[int, str]  # observation id -> fact id
    current: set[str]  # facts that are still true
    stale: set[str]  # facts a later one replaced
    replaced_by: dict[str, str] = field(default_factory=dict)  # stale fact -> its successor


def history_load(history: History, *, now: datetime | None = None) -> Loaded:
    """The history's sessions, observations (with their files) and summaries, ending just
    before `now`, in project `history.name`. Returns the labels, row id -> fact."""
    from django.utils import timezone

    from memory.models import Observation, ObservationFile, Session, Summary

    now = now or timezone.now()
    project = history.name
    root = f"/home/dev/{project}"

    def when(days: float) -> datetime:
        return now - timedelta(days=history.span - days)

    labels: dict[int, str] = {}
    by_session: dict[int, list[GenRow]] = {}
    for row in history.rows:
        by_session.setdefault(row.session, []).append(row)
    for s, start in enumerate(history.sessions):
        rows = by_session.get(s, [])
        ended = when(max([start, *(r.at for r in rows)]) + 5 / 1440)
        session = Session.objects.create(
            platform="claude-code",
            session_id=f"bench-{project}-{s}",
            project=project,
            project_root=root,
            cwd=root,
            status=Session.Status.COMPLETED,
            started=when(start),
            ended=ended,
        )
        for row in rows:
            reads = row.type in {"discovery", "decision"}
            obs = Observation.objects.create(
                session=session,
                project=project,
                type=row.type,
                title=row.title,
                narrative=row.text,
                files_read=list(row.files) if reads else [],
                files_modified=[] if reads else list(row.files),
                created=when(row.at),
                last_recalled=when(row.recalled_at) if row.recalled_at is not None else None,
            )
            ObservationFile.objects.bulk_create(
                ObservationFile(
                    observation=obs,
                    project=project,
                    path=path,
                    role=ObservationFile.Role.READ if reads else ObservationFile.Role.MODIFIED,
                    content_hash=hashlib.sha256(f"{path}@{row.session}".encode()).hexdigest(),
                    created=obs.created,
                )
                for path in row.files
            )
            labels[obs.pk] = row.fact
        if rows:
            Summary.objects.create(
                session=session,
                project=project,
                request=f"Continue on {project}: {rows[0].title}",
                completed="; ".join(dict.fromkeys(r.title for r in rows))[:400],
                created=ended,
            )
    replaced_by = {f.replaces: f.id for f in history.facts.values() if f.replaces in history.facts}
    return Loaded(
        name=history.name,
        project=project,
        root=root,
        labels=labels,
        current=set(history.current),
        stale=set(history.stale),
        replaced_by=replaced_by,
    )


def demo_labels(path: Path = DATA / "demo_labels.toml") -> list[dict[str, Any]]:
    try:
        facts = list(tomllib.loads(path.read_text()).get("facts", []))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CatalogueError(f"{path.name}: {exc}") from exc
    if not facts or any(not f.get("id") or not f.get("title") for f in facts):
        raise CatalogueError(f"{path.name}: every [[facts]] needs an id and a title")
    return facts


def demo_history_load() -> Loaded:
    """The bundled demo (`cmem demo`), its rows labelled from demo_labels.toml by title."""
    from memory.importers.demo import demo_document, demo_load
    from memory.models import Observation

    document = demo_document()
    project, root = document["project"], document["sessions"][0]["project_root"]
    demo_load()
    facts = demo_labels()
    by_title = {f["title"]: f["id"] for f in facts}
    labels: dict[int, str] = {}
    for pk, title in Observation.objects.filter(project=project).values_list("pk", "title"):
        if title not in by_title:
            raise CatalogueError(f"demo_labels.toml: no label for the demo row {title!r}")
        labels[pk] = by_title[title]
    stale = {f["id"] for f in facts if f.get("stale")}
    return Loaded(
        name="demo (acme-shop)",
        project=project,
        root=root,
        labels=labels,
        current={f["id"] for f in facts} - stale,
        stale=stale,
    )


# -- the index, before and after --------------------------------------------------------------


@dataclass(frozen=True)
class IndexView:
    text: str
    tokens: int
    ids: tuple[int, ...]  # row ids shown as current, in index order


def shown_ids(text: str) -> tuple[int, ...]:
    return tuple(int(m) for m in _ROW_ID.findall(text))


@contextmanager
def _uncapped() -> Iterator[None]:
    """The index without Claude Code's 10,000-character cap (context.MAX_CHARS), so it can
    hold every row: the same information before and after, measured in the real layout."""
    from memory.briefing import context

    saved = context.MAX_CHARS
    context.MAX_CHARS = 10**8
    try:
        yield
    finally:
        context.MAX_CHARS = saved


# Every row the index would show: the most observations the setting allows, no token budget.
FULL_SETTINGS = {"CLAUDE_MEM_CONTEXT_OBSERVATIONS": "500", "CLAUDE_MEM_CONTEXT_TOKENS": "0"}


def index_view(loaded: Loaded, *, full: bool) -> IndexView:
    from memory import config
    from memory.briefing.context import context_text
    from memory.models import ContextCache, estimate_tokens

    ContextCache.invalidate(project=loaded.project)
    if full:
        with _uncapped():
            text = context_text(
                project=loaded.project,
                root=loaded.root,
                settings={**config.load(), **FULL_SETTINGS},
            )
    else:
        text = context_text(project=loaded.project, root=loaded.root)
    return IndexView(text=text, tokens=estimate_tokens(text), ids=shown_ids(text))


@dataclass
class Measure:
    """One history's index before and after one consolidation pass, against its labels."""

    name: str
    rows: int
    facts: int
    current_facts: int
    stale_facts: int
    full_before: IndexView
    full_after: IndexView
    default_before: IndexView
    default_after: IndexView
    changes: dict[str, int]  # action -> rows the pass changed
    lost: list[str]  # current facts with no row left in the (full) index
    lost_to_demotion: list[str]  # of those, facts whose rows were only demoted
    stale_shown_before: list[str]
    stale_shown_after: list[str]
    against_labels: list[str]  # changes the labels say are wrong (a fact folded into another)
    missed: list[str]  # facts still shown by more than one row after the pass (examples)
    labels: dict[int, str] = field(default_factory=dict, repr=False)
    current: set[str] = field(default_factory=set, repr=False)  # current facts with rows

    def facts_shown(self, view: IndexView) -> set[str]:
        return {self.labels[i] for i in view.ids if i in self.labels}

    @property
    def reduction(self) -> float:
        before = self.full_before.tokens
        return (before - self.full_after.tokens) / before if before else 0.0


def index_measure(loaded: Loaded, *, consolidate: Callable[[str], Any]) -> Measure:
    """Render the index (every row; then the default budget), run `consolidate(project)`,
    render again, and compare what is shown with the labels."""
    from memory.models import Observation

    full_before = index_view(loaded, full=True)
    default_before = index_view(loaded, full=False)
    consolidate(loaded.project)
    full_after = index_view(loaded, full=True)
    default_after = index_view(loaded, full=False)

    labels = loaded.labels
    state = {
        pk: (status, superseded_by, demoted)
        for pk, status, superseded_by, demoted in Observation.objects.filter(
            pk__in=list(labels)
        ).values_list("pk", "status", "superseded_by", "demoted")
    }
    changes: dict[str, int] = {}
    against: list[str] = []
    for pk, (status, by, demoted) in sorted(state.items()):
        if status != Observation.Status.CURRENT:
            changes[status] = changes.get(status, 0) + 1
            fact = labels[pk]
            successor = labels.get(by) if by else None
            fine = (
                successor == fact
                or (successor is not None and _replaces(loaded, successor, fact))
                or (successor is None and fact in loaded.stale)
            )
            if not fine:
                against.append(
                    f"#{pk} ({fact}) {status}" + (f" by #{by} ({successor})" if by else "")
                )
        elif demoted:
            changes["demoted"] = changes.get("demoted", 0) + 1

    def facts_of(view: IndexView) -> list[str]:
        return [labels[i] for i in view.ids if i in labels]

    shown_after = set(facts_of(full_after))
    had_rows = set(labels.values())
    lost = sorted((loaded.current & had_rows) - shown_after)
    lost_to_demotion = [
        f
        for f in lost
        if all(
            state[pk][0] == Observation.Status.CURRENT for pk, fact in labels.items() if fact == f
        )
    ]
    counts: dict[str, int] = {}
    for fact in facts_of(full_after):
        counts[fact] = counts.get(fact, 0) + 1
    return Measure(
        name=loaded.name,
        rows=len(labels),
        facts=len(had_rows),
        current_facts=len(loaded.current & had_rows),
        stale_facts=len(loaded.stale & had_rows),
        full_before=full_before,
        full_after=full_after,
        default_before=default_before,
        default_after=default_after,
        changes=changes,
        lost=lost,
        lost_to_demotion=lost_to_demotion,
        stale_shown_before=sorted(loaded.stale & set(facts_of(full_before))),
        stale_shown_after=sorted(loaded.stale & shown_after),
        against_labels=against,
        missed=[f"{f} ×{n}" for f, n in sorted(counts.items(), key=lambda kv: -kv[1]) if n > 1],
        labels=labels,
        current=loaded.current & had_rows,
    )


def _replaces(loaded: Loaded, newer: str, older: str) -> bool:
    """`newer` replaced `older`, directly or down a chain."""
    seen = older
    while seen in loaded.replaced_by:
        seen = loaded.replaced_by[seen]
        if seen == newer:
            return True
    return False


def rules_pass(project: str) -> Any:
    """The consolidation pass in rules mode (memory/curation/consolidation/run.py)."""
    from memory.curation.consolidation.run import consolidation_run

    return consolidation_run(project=project, mode="rules", dry_run=False)
