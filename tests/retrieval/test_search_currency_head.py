"""Keyword search ranks observations by bm25 over the FTS index alone and reads only its
head's rows that are not current or are guesses (sqlite.py `_currency_ranked`); when too
many of the head drop out, it ranks the exact way. Both give the same answer."""

from __future__ import annotations

import pytest
from django.db import connection

from memory.models import Observation, Session
from memory.retrieval.search.query import SearchQuery
from memory.retrieval.search.service import search

pytestmark = pytest.mark.django_db


def _rows(n: int, title: str, **fields: object) -> list[int]:
    session = Session.objects.create(session_id=f"s-{Session.objects.count()}", project="shop")
    return [
        Observation.objects.create(session=session, project="shop", title=title, **fields).pk
        for _ in range(n)
    ]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the SQLite ranking")
@pytest.mark.parametrize("rows", [False, True])
def test_a_head_full_of_retired_rows_falls_back_to_the_exact_ranking(rows: bool) -> None:
    current = _rows(3, "cache warmup cache warmup notes")
    _rows(30, "cache warmup cache warmup cache warmup", status="retired")
    query = SearchQuery(text="cache warmup", kinds=("observation",), limit=2, mode="keyword")
    hits = search(query)
    assert len(hits) == 2 and {h.id for h in hits} <= set(current)
    everything = search(SearchQuery(**{**query.__dict__, "status": "all", "limit": 40}))
    assert len(everything) == 33


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the SQLite ranking")
def test_a_guess_ranks_after_an_equal_known_row() -> None:
    (guess,) = _rows(1, "pool exhaustion under load", certainty="hypothesis")
    (known,) = _rows(1, "pool exhaustion under load", certainty="confirmed")
    hits = search(SearchQuery(text="pool exhaustion", kinds=("observation",), mode="keyword"))
    assert [h.id for h in hits] == [known, guess]
