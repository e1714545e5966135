"""The index-consolidation bench's core, on a small generated history, so it cannot rot:
the hand-written catalogue loads and generates deterministically, and one rules pass over a
history leaves every current fact in the SessionStart index with fewer tokens.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.bench.consolidation_history import (
    Catalogue,
    CatalogueError,
    catalogue_load,
    demo_history_load,
    history_generate,
    history_load,
    index_measure,
    rules_pass,
    shown_ids,
)


def small_history_catalogue() -> Catalogue:
    catalogue = catalogue_load()
    # Two reversals, a refuted guess, a fix of a found bug, and repeated discoveries.
    keep = [
        "engine-cheapest", "slow-quotes-ups-guess", "slow-quotes-n-plus-one", "cache-redis",
        "cache-lru", "cache-key", "money-decimal", "money-cents", "tests-pass",
        "fedex-ignores-dim-weight", "fedex-billable-weight", "apikey-hashing",
    ]  # fmt: skip
    return replace(catalogue, facts={k: catalogue.facts[k] for k in keep})


def test_catalogue_halves_keep_each_chain_together() -> None:
    catalogue = catalogue_load()
    tuning, held_out = catalogue.halves()
    assert not set(tuning) & set(held_out)
    assert set(tuning) | set(held_out) == set(catalogue.facts)
    for fact in catalogue.facts.values():
        if fact.replaces:
            assert (fact.id in tuning) == (fact.replaces in tuning), fact.id
    assert catalogue.stale() & set(held_out) and catalogue.stale() & set(tuning)


def test_generation_is_deterministic_and_labelled() -> None:
    catalogue = catalogue_load()
    one = history_generate(catalogue, name="a", seed=3)
    two = history_generate(catalogue, name="a", seed=3)
    other = history_generate(catalogue, name="a", seed=4)
    assert one.rows == two.rows and one.rows != other.rows
    assert {r.fact for r in one.rows} == set(catalogue.facts)  # every fact has a row
    for row in one.rows:  # each row is one of its fact's phrasings
        fact = catalogue.facts[row.fact]
        assert any(row.title == t and row.text.startswith(x) for t, x in fact.phrasings)
    for fact in catalogue.facts.values():  # what was replaced is seen before its successor
        if fact.replaces:
            old = max(r.at for r in one.rows if r.fact == fact.replaces)
            assert old < min(r.at for r in one.rows if r.fact == fact.id)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('[[facts]]\nid = "a"\ntype = "guess"\n', "type must be one of"),
        (
            '[[facts]]\nid = "a"\ntype = "change"\ndays = [0, 5]\nweight = 2\n'
            'phrasings = [["only one", "x"]]\n',
            "needs 2-5 phrasings",
        ),
        (
            '[[facts]]\nid = "a"\ntype = "change"\ndays = [0, 5]\nweight = 2\n'
            'phrasings = [["t", "x"], ["u", "y"]]\n'
            '[[facts]]\nid = "b"\ntype = "change"\ndays = [3, 9]\nweight = 2\nreplaces = "a"\n'
            'phrasings = [["t", "x"], ["u", "y"]]\n',
            "before 'a' is last seen",
        ),
        ("facts = [", "facts.toml"),
    ],
)
def test_a_broken_catalogue_says_what_is_wrong(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "facts.toml"
    path.write_text(text)
    with pytest.raises(CatalogueError, match=problem):
        catalogue_load(path)


def test_shown_ids_reads_row_lines_only() -> None:
    text = "S12 9:00a ◎ request\nrates/engine.py:\n41 9:02a ○ Title ~80\n- #7 pinned\nreplaces #3"
    assert shown_ids(text) == (41, 7)


@pytest.mark.django_db
def test_a_rules_pass_loses_no_current_fact_and_shrinks_the_index() -> None:
    history = history_generate(
        small_history_catalogue(), name="bench-small", seed=7, sessions=14, span=40
    )
    loaded = history_load(history)
    measure = index_measure(loaded, consolidate=rules_pass)

    # Before the pass the index shows every row (the same information), so every fact.
    assert set(measure.full_before.ids) == set(loaded.labels)
    assert measure.stale_shown_before  # the history does hold stale facts
    assert measure.lost == [], measure.lost
    assert measure.full_after.tokens < measure.full_before.tokens
    assert len(measure.full_after.ids) < len(measure.full_before.ids)
    assert len(measure.stale_shown_after) <= len(measure.stale_shown_before)
    assert sum(measure.changes.values()) > 0


@pytest.mark.django_db
def test_the_demo_is_labelled_and_measured() -> None:
    loaded = demo_history_load()
    assert len(loaded.labels) == 13 and loaded.stale
    measure = index_measure(loaded, consolidate=rules_pass)
    assert measure.lost == []
    assert measure.full_after.tokens <= measure.full_before.tokens
