"""Which matches SQLite's keyword search ranks: the newest RANK_WINDOW of a kind, or only the
newest COMMON_WINDOW when the query matches at least half of the recent rows (issue 19).
Hand-made stores where the two windows give different answers, so each test says which
window answered."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memory.models import Observation, Prompt, Session
from memory.retrieval.search.query import SearchQuery
from memory.retrieval.search.service import search
from memory.retrieval.search.sqlite import COMMON_WINDOW

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "sqlite", reason="the FTS5 rank window"),
]

STRONG = "Cache cache cache cache"  # a title bm25 ranks above any plain row


def _store(titles: list[str], *, project: str = "shop") -> list[int]:
    """Observations oldest first (ids in that order), one a minute."""
    session = Session.objects.create(session_id=f"s-{project}-{len(titles)}", project=project)
    start = timezone.now() - timedelta(days=1)
    rows = Observation.objects.bulk_create(
        [
            Observation(
                session=session,
                project=project,
                type="change",
                title=title,
                narrative="plain words here",
                created=start + timedelta(minutes=i),
            )  # fmt: skip
            for i, title in enumerate(titles)
        ]
    )
    return [row.pk for row in rows]


def _ids(text: str, **kwargs: object) -> list[int]:
    query = SearchQuery(text=text, mode="keyword", kinds=("observation",), **kwargs)  # type: ignore[arg-type]
    return [hit.id for hit in search(query)]


def test_a_word_in_every_row_ranks_only_the_newest_common_window() -> None:
    # The strong row is older than the newest COMMON_WINDOW matches: every row matches, so
    # only those newest are ranked, and the strong row is not among them.
    ids = _store([STRONG] + ["Cache note"] * (COMMON_WINDOW + 50))
    found = _ids("cache")
    assert len(found) == 20
    assert ids[0] not in found
    assert set(found) <= set(ids[-COMMON_WINDOW:])


def test_within_the_small_window_bm25_still_orders() -> None:
    # A title with the word more often outranks the plain rows around it, newest or not.
    titles = ["Cache note"] * (COMMON_WINDOW * 2)
    titles[-COMMON_WINDOW // 2] = STRONG
    ids = _store(titles)
    assert _ids("cache")[0] == ids[-COMMON_WINDOW // 2]


def test_a_word_in_few_recent_rows_is_ranked_over_the_large_window() -> None:
    # One row in three matches: the newest COMMON_WINDOW matches span three times as many
    # rows, so the whole RANK_WINDOW is ranked and the old strong row comes first.
    titles = ["Cache note" if i % 3 == 0 else "Other note" for i in range(COMMON_WINDOW * 4)]
    titles[0] = STRONG
    ids = _store(titles)
    assert _ids("cache")[0] == ids[0]


def test_fewer_matches_than_the_small_window_are_all_ranked() -> None:
    # Every row matches, but there are fewer than COMMON_WINDOW: all of them are ranked.
    ids = _store([STRONG] + ["Cache note"] * (COMMON_WINDOW - 10))
    assert _ids("cache")[0] == ids[0]


def test_a_page_past_the_small_window_is_ranked_over_the_large_one() -> None:
    ids = _store(["Cache note"] * (COMMON_WINDOW * 2))
    page = _ids("cache", limit=20, offset=COMMON_WINDOW)
    assert len(page) == 20
    assert set(page) <= set(ids)
    assert not set(page) & set(_ids("cache", limit=COMMON_WINDOW))


def test_filters_count_in_the_probe() -> None:
    # "cache" is in every row; shop's rows are all older than blog's. Unfiltered, the newest
    # matches (blog's) are dense; with project=shop, the table holds more than twice as many
    # rows from the oldest of shop's newest matches on, so the large window ranks.
    titles = ["Cache note"] * (COMMON_WINDOW * 2)
    titles[0] = STRONG
    shop = _store(titles, project="shop")
    blog = _store(["Cache note"] * (COMMON_WINDOW * 2 + 1), project="blog")
    assert shop[0] not in _ids("cache")
    found = _ids("cache", project="shop")
    assert found[0] == shop[0]
    assert not set(found) & set(blog)


def test_prompts_rank_through_the_session_join_with_the_probe() -> None:
    session = Session.objects.create(session_id="s-prompts", project="shop")
    other = Session.objects.create(session_id="s-other", project="blog")
    Prompt.objects.bulk_create(
        [Prompt(session=session, number=i + 1, text="fix the cache please") for i in range(COMMON_WINDOW + 5)]
        + [Prompt(session=other, number=1, text="fix the cache elsewhere")]
    )  # fmt: skip
    hits = search(SearchQuery(text="cache", mode="keyword", kinds=("prompt",), project="shop"))
    assert len(hits) == 20
    assert {hit.project for hit in hits} == {"shop"}


def test_the_any_word_fallback_ranks_over_the_large_window() -> None:
    # No row holds all three words, so any word may match: every row does ("cache"), but a
    # dense any-word match says nothing of the rare word, which bm25 ranks first however
    # old its row.
    titles = ["Cache note"] * (COMMON_WINDOW * 2)
    titles[0] = "Cache zebra"
    ids = _store(titles)
    assert _ids("cache zebra missing")[0] == ids[0]


def test_a_prefix_term_is_not_probed() -> None:
    # A prefix merges every word it covers each time the match is opened: it keeps the
    # large window, so the old strong row is ranked.
    ids = _store([STRONG] + ["Cache note"] * (COMMON_WINDOW + 50))
    assert _ids("cach*")[0] == ids[0]
