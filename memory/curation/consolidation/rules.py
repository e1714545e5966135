"""The offline rules: deterministic, no model, each change with the evidence in its reason.

- duplicates: same type, same files (or none), near-identical title and text (word
  overlap; embedding cosine when both rows have a vector) are folded into the best row;
- reversed decisions: a newer decision on the same topic or files that says it reverses
  something ("instead of", "switched to", "reverted", "no longer"…) supersedes every older
  decision it talks about on that topic or file (however far back in the window), and a
  repeat folded away still speaks through the row it was folded into;
- changed values: a newer change, fix or decision on the same files that says a value
  changed ("raised to", "back to", "removed the … pin") supersedes an older row whose title
  states that value of the same subject (the words next to the verb are in its title, and
  most of its title is in the newer one's);
- fixed bugs: an older discovery reporting a defect ("broken", "wrong", "applied twice",
  "missing"…) is superseded by a later bugfix on the same files whose text holds most of its
  title (two title words in common at least);
- refuted hypotheses: a hypothesis (certainty, or hedged wording in an observer row) that a
  later row on the same files contradicts ("ruled out", "was actually", "not a <word of the
  guess>", or a confirmed bugfix naming another cause) is abandoned;
- confirmed hypotheses: a hypothesis that a later fix or change on the same files and
  subject settled without contradicting it is superseded by it ("settled by #N");
- demotion (memory/curation/consolidation/run.py) is a query, not a rule over the window.

Losing a current fact is worse than keeping a stale one: every rule that supersedes across
rows that are not repeats asks for the same files (or topic) and a shared subject, never
the file alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from memory.curation.consolidation.candidates import (
    CAUSE,
    CONTRADICTION,
    REVERSAL,
    Row,
    Window,
    clusters,
    covered,
    jaccard,
    kind_index,
    newer,
    related,
    related_index,
    sharing,
    tokens,
    words,
)
from memory.curation.consolidation.plan import ABANDON, SUPERSEDE, Plan
from memory.models import Observation

T = Observation.Type

# Near-identical: titles share this much of their words and the texts this much, or the
# same normalised title and texts sharing SAME_TITLE_TEXT, or embeddings this close with
# titles sharing EMBEDDING_TITLE.
TITLE_OVERLAP = 0.75
TEXT_OVERLAP = 0.5
SAME_TITLE_TEXT = 0.35
EMBEDDING_COSINE = 0.95
EMBEDDING_TITLE = 0.5
# A reversal names the older decision's subject: this share of its title's words at least,
# and (the reversal now looks back over the whole window of a file) two words at least: one
# shared word ("cache") is a file's theme, not a subject.
SUBJECT_OVERLAP = 0.3
SUBJECT_WORDS = 2
# A changed value's older row is about that subject: at least half of its title's words are
# in the newer row's title (a row that mentions the subject among other things is kept).
STATE_TITLE_OVERLAP = 0.5
# A confirmation is on the guess's subject: two title words in common, and this share of the
# guess's title in the confirming row's text.
CONFIRM_OVERLAP = 0.3

# A fixed bug's report is about the fix's subject: this share of its title in the fix's text.
FIX_OVERLAP = 0.5

# Kinds of row that record something done: what can change a value or settle a guess.
DONE_TYPES = frozenset({T.CHANGE, T.BUGFIX, T.DECISION, T.REFACTOR, T.FEATURE})
# Kinds of row that state how things are (and so can be made stale by a change).
STATE_TYPES = frozenset({T.DISCOVERY, T.CHANGE, T.DECISION, T.FEATURE, T.NOTE})

# "<subject> raised to <value>": the subject is the words before the verb.
VALUE_CHANGE = re.compile(
    r"\b(?:(?:raised|lowered|increased|decreased|reduced|bumped|changed|set|restored|reverted|"
    r"upgraded|downgraded|updated|switched|moved)(?: back)? to|back to|(?:is|are) now)\b",
    re.IGNORECASE,
)
# "removed the <subject>": the subject is the words after the verb (or before it, "Redis
# dropped", when nothing follows in the clause).
REMOVAL = re.compile(r"\b(?:removed|dropped|unpinned|deleted|reverted)\b", re.IGNORECASE)
_CLAUSE = re.compile(r"[;:,!?()\[\]|\n]|\.(?!\d)")  # not the dot of "0.27"
# "not a network call": a later row denying a word the guess is built on.
NEGATION = re.compile(r"\bnot (?:a |an |the |from |in |by )?([a-z0-9_]+)", re.IGNORECASE)
# A discovery that reports a defect (what a later fix makes stale).
DEFECT = re.compile(
    r"\b(bugs?|broken|wrong|incorrect(?:ly)?|failures?|fail(?:s|ed|ing)?|crash(?:es|ed|ing)?|"
    r"errors?|leak(?:s|ed|ing)?|twice|doubled?|missing|ignores|ignored|ignoring|regression|"
    r"hang(?:s|ing)?|off by|overcharg\w*|undercharg\w*|race condition|not (?:validated|"
    r"checked|verified|signed|escaped|handled|closed|released))\b",
    re.IGNORECASE,
)
_SUBJECT_MAX = 3  # words next to the verb that name its subject
_DIGIT = re.compile(r"\d")


def near_duplicate(a: Row, b: Row, window: Window) -> bool:
    if a.hypothesis != b.hypothesis:
        return False  # a guess and what settled it are not repeats of each other
    title = jaccard(a.title_tokens, b.title_tokens)
    text = jaccard(a.text_tokens, b.text_tokens)
    if title >= TITLE_OVERLAP and text >= TEXT_OVERLAP:
        return True
    if a.title_key and a.title_key == b.title_key and text >= SAME_TITLE_TEXT:
        return True
    cosine = window.cosine(a, b)
    return cosine is not None and cosine >= EMBEDDING_COSINE and title >= EMBEDDING_TITLE


def keeper(rows: list[Row]) -> Row:
    """The row a group folds into: a person's or pinned row if there is one (it cannot be
    changed anyway), else the newest of those at least 80% as complete as the fullest."""
    richest = max(len(r.text_tokens) for r in rows)
    return max(
        rows,
        key=lambda r: (r.locked, len(r.text_tokens) >= 0.8 * richest, r.created, r.id),
    )


def fold_duplicates(window: Window, plan: Plan) -> dict[int, int]:
    """Fold each group into its keeper; returns folded row id -> keeper id."""
    folded: dict[int, int] = {}
    for group in clusters(window, near_duplicate):
        kept = keeper(group)
        for row in group:
            if row.id != kept.id and plan.propose(
                row, action=SUPERSEDE, by=kept, reason=f"duplicate of #{kept.id}"
            ):
                folded[row.id] = kept.id
    return folded


def _standing(row: Row, folded: dict[int, int], rows: dict[int, Row]) -> Row:
    """The row that stands for `row` after the folds: itself, or the row it was folded into
    (a repeat's words still count, through the row that kept them)."""
    return rows[folded[row.id]] if row.id in folded else row


def _live(row: Row, plan: Plan) -> bool:
    """Still current in this plan (not changed by a rule yet)."""
    return row.id not in plan.taken


def supersede_reversed(window: Window, plan: Plan, folded: dict[int, int]) -> None:
    rows = window.by_id()
    decisions = kind_index(window.rows, lambda r: r.type == T.DECISION)
    for row in window.rows:  # newest first: the latest reversal wins
        if row.type != T.DECISION:
            continue
        match = REVERSAL.search(row.text)
        if match is None:
            continue
        by = _standing(row, folded, rows)
        if not _live(by, plan):
            continue  # itself reversed by a newer decision
        for older in sharing(row, decisions):
            if not newer(row, older):
                continue
            target = _standing(older, folded, rows)
            if target.id == by.id or not _live(target, plan) or not newer(by, target):
                continue
            same_topic = bool(row.topic) and row.topic == older.topic
            if not same_topic and not _names_subject(older, row):
                continue  # same file, another subject
            plan.propose(
                target,
                action=SUPERSEDE,
                by=by,
                reason=f"reversed by #{by.id} (“{match.group(0)}”)",
            )


def _names_subject(older: Row, row: Row) -> bool:
    shared = older.title_tokens & row.text_tokens
    return len(shared) >= SUBJECT_WORDS and covered(older.title_tokens, row.text_tokens) >= (
        SUBJECT_OVERLAP
    )


def state_change(text: str) -> tuple[str, list[str]] | None:
    """The first "<subject> raised to …" / "removed <subject>" phrase of `text`: (the
    phrase, the subject's words, nearest the verb first), or None."""
    for clause in _clauses(text):
        found = VALUE_CHANGE.search(clause)
        if found:
            before = words(clause[: found.start()])[-_SUBJECT_MAX:]
            if before:
                return found.group(0), before[::-1]
        found = REMOVAL.search(clause)
        if found:
            after = words(clause[found.end() :])[:_SUBJECT_MAX]
            before = words(clause[: found.start()])[-_SUBJECT_MAX:][::-1]
            subject = after or before
            if subject:
                return found.group(0), subject
    return None


def _clauses(text: str) -> list[str]:
    """The text cut at punctuation: a subject never reaches across a comma or a sentence."""
    return [c for c in _CLAUSE.split(text) if c.strip()]


def _states_value(row: Row) -> bool:
    return row.type in STATE_TYPES and not row.hypothesis and row.files != frozenset()


def supersede_changed_values(window: Window, plan: Plan, folded: dict[int, int]) -> None:
    """A newer change on the same files saying a value of a subject changed supersedes an
    older row stating that subject's value (see the module's docstring for the tests)."""
    rows = window.by_id()
    stating = kind_index(window.rows, _states_value)
    for row in window.rows:  # newest first: the latest change wins
        if row.type not in DONE_TYPES or row.hypothesis or not row.files:
            continue
        said = state_change(row.title) or state_change(row.text)
        if said is None:
            continue
        phrase, subject = said
        by = _standing(row, folded, rows)
        if not _live(by, plan):
            continue
        for older in sharing(row, stating):
            if not newer(row, older) or not older.files <= row.files:
                continue
            target = _standing(older, folded, rows)
            if target.id == by.id or not _live(target, plan) or not newer(by, target):
                continue
            if not _same_value_subject(older, row, phrase, subject):
                continue
            plan.propose(
                target,
                action=SUPERSEDE,
                by=by,
                reason=(
                    f"superseded: newer {row.type} #{by.id} on the same file and subject"
                    f" says “{phrase}”"
                ),
            )


def _same_value_subject(older: Row, row: Row, phrase: str, subject: list[str]) -> bool:
    """`older`'s title states a value of the subject `row` says changed: the word next to
    the verb and two of the subject's words are in its title, most of its title is in
    `row`'s title, and (for "raised to" and the like) its title holds a value, a number."""
    title = older.title_words
    if subject[0] not in title or len(set(subject) & title) < min(2, len(set(subject))):
        return False
    if len(set(subject) & title) < 2 and not _DIGIT.search(subject[0]):
        return False  # one shared word names a theme, not a subject
    if covered(title, row.title_words) < STATE_TITLE_OVERLAP:
        return False
    # Both name the same subject, not one a part of the other: the words naming the subject
    # before the older row's own value ("Rate cache TTL" of "Rate cache TTL is 15 minutes")
    # are all in what the newer row says changed ("Rate cache TTL raised to 1 hour"), so
    # "Rate cache is now in-process" never replaces "Rate cache TTL raised to 1 hour".
    own = stated_subject(older.title)
    if own and not own <= set(subject) | set(_subject_after(row, phrase)):
        return False
    removal = REMOVAL.fullmatch(phrase) is not None
    return removal or _DIGIT.search(older.title) is not None


# Verbs of change left out of a subject ("CARRIER_TIMEOUT_S lowered from 10" names the
# carrier timeout).
_VERBS = frozenset(
    "raised lowered increased decreased reduced bumped changed set restored reverted upgraded "  # noqa: SIM905 - a word list reads better as text
    "downgraded updated switched moved pinned unpinned removed dropped deleted back".split()
)
_VALUE_START = re.compile(r"\d|" + VALUE_CHANGE.pattern, re.IGNORECASE)


def stated_subject(title: str) -> set[str]:
    """The words naming what a title states the value of: up to three content words before
    its first number or change verb, verbs left out; empty when it states no value."""
    for clause in _clauses(title):
        found = _VALUE_START.search(clause)
        if found:
            before = [w for w in words(clause[: found.start()]) if w not in _VERBS]
            return set(before[-_SUBJECT_MAX:])
    return set()


def _subject_after(row: Row, phrase: str) -> list[str]:
    """For a removal, the words after the verb in the newer row's title (its subject)."""
    if REMOVAL.fullmatch(phrase) is None:
        return []
    found = REMOVAL.search(row.title)
    return words(row.title[found.end() :])[:_SUBJECT_MAX] if found else []


def supersede_fixed_bugs(window: Window, plan: Plan, folded: dict[int, int]) -> None:
    """A discovery that reported a defect, made stale by the later bugfix of it."""
    rows = window.by_id()
    fixes = kind_index(window.rows, lambda r: r.type == T.BUGFIX and not r.hypothesis)
    for row in window.rows:
        if row.type != T.DISCOVERY or row.hypothesis or not row.files or not _live(row, plan):
            continue
        flaw = DEFECT.search(row.title) or DEFECT.search(row.text)
        if flaw is None:
            continue
        for fix in sorted(sharing(row, fixes), key=lambda r: (r.created, r.id)):
            if not newer(fix, row) or not row.files <= fix.files:
                continue
            shared = row.title_words & fix.title_words
            if len(shared) < 2 or covered(row.title_words, fix.text_words) < FIX_OVERLAP:
                continue
            by = _standing(fix, folded, rows)
            if not _live(by, plan) or not newer(by, row):
                continue
            if plan.propose(
                row,
                action=SUPERSEDE,
                by=by,
                reason=(
                    f"fixed by #{by.id}: a later bugfix on the same files and subject"
                    f" ({', '.join(sorted(shared)[:4])}; the report said “{flaw.group(0)}”)"
                ),
            ):
                break


def abandon_refuted(window: Window, plan: Plan, folded: dict[int, int]) -> None:
    rows = window.by_id()
    index = related_index(window.rows)
    for row in window.rows:
        if row.id in plan.taken or not row.hypothesis:
            continue
        for later in sorted(related(row, index), key=lambda r: (r.created, r.id)):
            if not newer(later, row) or later.hypothesis:
                continue
            by = _standing(later, folded, rows)
            why = refutation(row, later, said_by=by.id)
            if why and _live(by, plan) and plan.propose(row, action=ABANDON, by=by, reason=why):
                break


def refutation(hypothesis: Row, later: Row, *, said_by: int | None = None) -> str:
    """Why `later` contradicts `hypothesis`, or "" when it does not (`said_by`: the id the
    reason names, the row `later` was folded into when it was)."""
    ref = said_by or later.id
    if covered(hypothesis.title_tokens, later.text_tokens) < 0.2:
        return ""  # same file, another question
    said = CONTRADICTION.search(later.text)
    if said:
        return f"contradicted by #{ref} (“{said.group(0)}”)"
    denied = _denial(hypothesis, later)
    if denied:
        return f"contradicted by #{ref} (“{denied}”)"
    if later.type == T.BUGFIX and later.certainty == Observation.Certainty.CONFIRMED:
        cause = CAUSE.search(later.text)
        if cause and covered(tokens(cause.group("cause")), hypothesis.text_tokens) < 0.6:
            return f"the confirmed fix #{ref} names another cause (“{cause.group(0)[:80]}”)"
    return ""


def _denial(hypothesis: Row, later: Row) -> str:
    """`later` says "not <a word the guess's title is built on>" ("Not a network call"
    against "flakiness probably due to network access"), and the guess did not itself
    deny that word ("the token is probably not refreshed" is confirmed, not refuted, by
    "token not refreshed")."""
    negated_in_guess = {w for m in NEGATION.finditer(hypothesis.text) for w in words(m.group(1))}
    for match in NEGATION.finditer(later.text):
        said = words(match.group(1))
        if said and said[0] in hypothesis.title_words and said[0] not in negated_in_guess:
            return match.group(0)
    return ""


def supersede_confirmed(window: Window, plan: Plan, folded: dict[int, int]) -> None:
    """A guess a later fix or change on the same files and subject settled (and did not
    contradict: that is `abandon_refuted`, which runs first) is superseded by it."""
    rows = window.by_id()
    done = kind_index(window.rows, lambda r: r.type in DONE_TYPES - {T.DECISION})
    for row in window.rows:
        if not _live(row, plan) or not row.hypothesis or not row.files:
            continue
        for later in sorted(sharing(row, done), key=lambda r: (r.created, r.id)):
            if later.hypothesis or not newer(later, row) or not row.files <= later.files:
                continue
            shared = row.title_words & later.title_words
            if len(shared) < 2 or covered(row.title_words, later.text_words) < CONFIRM_OVERLAP:
                continue
            by = _standing(later, folded, rows)
            if not _live(by, plan):
                continue
            words_shown = ", ".join(sorted(shared)[:4])
            if plan.propose(
                row,
                action=SUPERSEDE,
                by=by,
                reason=(
                    f"settled by #{by.id}: a later {later.type} on the same files and"
                    f" subject ({words_shown})"
                ),
            ):
                break


Rule = Callable[[Window, Plan, dict[int, int]], None]


def plan_rules(window: Window, plan: Plan) -> None:
    """Every offline rule over one window, duplicates first (a folded row is judged no more,
    but its words count through the row it was folded into), refutation before
    confirmation (a guess a later row denies is abandoned, not confirmed)."""
    folded = fold_duplicates(window, plan)
    rules: tuple[Rule, ...] = (
        supersede_reversed,
        supersede_changed_values,
        abandon_refuted,
        supersede_fixed_bugs,
        supersede_confirmed,
    )
    for rule in rules:
        rule(window, plan, folded)
