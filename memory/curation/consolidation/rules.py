"""The offline rules: deterministic, no model, each change with the evidence in its reason.

- duplicates: same type, same files (or none), near-identical title and text (word
  overlap; embedding cosine when both rows have a vector) are folded into the best row;
- reversed decisions: a newer decision on the same topic or files that says it reverses
  something ("instead of", "switched to", "reverted", "no longer"…) supersedes the older
  decision it talks about;
- refuted hypotheses: a hypothesis (certainty, or hedged wording in an observer row) that a
  later row on the same files contradicts ("ruled out", "was actually", or a confirmed
  bugfix naming another cause) is abandoned;
- demotion (memory/curation/consolidation/run.py) is a query, not a rule over the window.
"""

from __future__ import annotations

from memory.curation.consolidation.candidates import (
    CAUSE,
    CONTRADICTION,
    REVERSAL,
    Row,
    Window,
    clusters,
    covered,
    jaccard,
    newer,
    related,
    related_index,
    tokens,
)
from memory.curation.consolidation.plan import ABANDON, SUPERSEDE, Plan
from memory.models import Observation

# Near-identical: titles share this much of their words and the texts this much, or the
# same normalised title and texts sharing SAME_TITLE_TEXT, or embeddings this close with
# titles sharing EMBEDDING_TITLE.
TITLE_OVERLAP = 0.75
TEXT_OVERLAP = 0.5
SAME_TITLE_TEXT = 0.35
EMBEDDING_COSINE = 0.95
EMBEDDING_TITLE = 0.5
# A reversal names the older decision's subject: this share of its title's words at least.
SUBJECT_OVERLAP = 0.3


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


def fold_duplicates(window: Window, plan: Plan) -> None:
    for group in clusters(window, near_duplicate):
        kept = keeper(group)
        for row in group:
            if row.id != kept.id:
                plan.propose(row, action=SUPERSEDE, by=kept, reason=f"duplicate of #{kept.id}")


def supersede_reversed(window: Window, plan: Plan) -> None:
    index = related_index(window.rows)
    for row in window.rows:  # newest first: the latest reversal wins
        if row.type != Observation.Type.DECISION or row.id in plan.taken:
            continue
        match = REVERSAL.search(row.text)
        if match is None:
            continue
        for older in related(row, index):
            if older.type != Observation.Type.DECISION or not newer(row, older):
                continue
            same_topic = bool(row.topic) and row.topic == older.topic
            if not same_topic and covered(older.title_tokens, row.text_tokens) < SUBJECT_OVERLAP:
                continue  # same file, another subject
            plan.propose(
                older,
                action=SUPERSEDE,
                by=row,
                reason=f"reversed by #{row.id} (“{match.group(0)}”)",
            )


def abandon_refuted(window: Window, plan: Plan) -> None:
    index = related_index(window.rows)
    for row in window.rows:
        if row.id in plan.taken or not row.hypothesis:
            continue
        for later in sorted(related(row, index), key=lambda r: (r.created, r.id)):
            if not newer(later, row) or later.hypothesis:
                continue
            why = refutation(row, later)
            if why and plan.propose(row, action=ABANDON, by=later, reason=why):
                break


def refutation(hypothesis: Row, later: Row) -> str:
    """Why `later` contradicts `hypothesis`, or "" when it does not."""
    if covered(hypothesis.title_tokens, later.text_tokens) < 0.2:
        return ""  # same file, another question
    said = CONTRADICTION.search(later.text)
    if said:
        return f"contradicted by #{later.id} (“{said.group(0)}”)"
    if later.type == Observation.Type.BUGFIX and later.certainty == Observation.Certainty.CONFIRMED:
        cause = CAUSE.search(later.text)
        if cause and covered(tokens(cause.group("cause")), hypothesis.text_tokens) < 0.6:
            return f"the confirmed fix #{later.id} names another cause (“{cause.group(0)[:80]}”)"
    return ""


def plan_rules(window: Window, plan: Plan) -> None:
    """Every offline rule over one window, duplicates first (a folded row is judged no more)."""
    fold_duplicates(window, plan)
    supersede_reversed(window, plan)
    abandon_refuted(window, plan)
