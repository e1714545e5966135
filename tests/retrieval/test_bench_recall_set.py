"""The recall benchmark's labelled set and its fixed tuning / held-out split."""

from __future__ import annotations

from collections import Counter

from tests.bench.recall import GROUPS, load_set, split


def test_the_set_is_as_large_as_the_issue_asks() -> None:
    data = load_set()
    assert len(data["observations"]) >= 2000
    assert len({o["project"] for o in data["observations"]}) >= 4
    assert len(data["queries"]) >= 300
    assert set(Counter(q["group"] for q in data["queries"])) == set(GROUPS)
    keys = {o["key"] for o in data["observations"]}
    assert all(q["relevant"] and set(q["relevant"]) <= keys for q in data["queries"])


def test_the_split_is_fixed_disjoint_and_covers_every_group() -> None:
    queries = load_set()["queries"]
    tuning, held_out = split(queries)
    assert split(queries) == (tuning, held_out)  # deterministic: no randomness
    tuning_ids, held_ids = {q["id"] for q in tuning}, {q["id"] for q in held_out}
    assert not tuning_ids & held_ids
    assert tuning_ids | held_ids == {q["id"] for q in queries}
    assert abs(len(tuning) - len(held_out)) <= 1
    for group in GROUPS:
        in_tuning = sum(q["group"] == group for q in tuning)
        in_held = sum(q["group"] == group for q in held_out)
        # Each group lands in both halves about equally (ids run in source order).
        assert min(in_tuning, in_held) >= 0.35 * (in_tuning + in_held)
