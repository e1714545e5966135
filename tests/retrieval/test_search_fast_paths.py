"""Issue 19's fast paths of keyword search give the answers the plain code gave: the
/api/search body rendered without schema validation equals the validated one, and the
one-pass highlight equals the per-word reference below (the code it replaced), and so do
the offsets it gives without markers."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ninja.responses import NinjaJSONEncoder

from memory import config
from memory.api.retrieval import SearchOut
from memory.retrieval.search.query import (
    HIGHLIGHT_CLOSE,
    HIGHLIGHT_OPEN,
    SNIPPET_TOKENS,
    highlight,
    highlight_spans,
    marks_split,
)
from tests.retrieval.retrieval_seed import seed


def reference_highlight(text: str, words: list[str], *, width: int = SNIPPET_TOKENS) -> str:
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


def reference_marks_split(marked: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    plain: list[str] = []
    spans: list[tuple[int, int]] = []
    start: int | None = None
    for char in marked:
        if char == HIGHLIGHT_OPEN:
            start = len(plain)
        elif char == HIGHLIGHT_CLOSE:
            if start is not None and len(plain) > start:
                spans.append((start, len(plain)))
            start = None
        else:
            plain.append(char)
    return "".join(plain), tuple(spans)


PIECES = st.sampled_from(
    ["cache", "Cache", "CACHES", "xcache", "_gate", "gated", "pool", "é", "ß", "İ", "ǅ", "ﬁ",
     "K", "ſ", " ", "\n", "\t", "\u00a0", "\x1c", "-", ".", '", "', '["', '"]', "·", "x"]
)  # fmt: skip
WORDS = st.lists(st.sampled_from(["cache", "gate", "pool", "é", "ss", "i", "k", "s", "fi"]))


@pytest.mark.slow  # 400 examples, seconds: out of `make test-quick`
@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=80).map("".join), WORDS, st.sampled_from([16, 3, 1]))
def test_highlight_equals_the_per_word_reference(text: str, words: list[str], width: int) -> None:
    assert highlight(text, words, width=width) == reference_highlight(text, words, width=width)


@pytest.mark.slow  # 400 examples, seconds: out of `make test-quick`
@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=80).map("".join), WORDS, st.sampled_from([16, 3, 1]))
def test_highlight_spans_are_the_reference_without_its_markers(
    text: str, words: list[str], width: int
) -> None:
    # What SearchHit keeps: the plain snippet and the offsets, with no marker written.
    plain, spans = highlight_spans(text, words, width=width)
    assert (plain, tuple(spans)) == marks_split(reference_highlight(text, words, width=width))


@given(st.lists(st.sampled_from(["a", "bc", HIGHLIGHT_OPEN, HIGHLIGHT_CLOSE, " "])).map("".join))
def test_marks_split_equals_the_per_character_reference(marked: str) -> None:
    assert marks_split(marked) == reference_marks_split(marked)


@pytest.mark.django_db
def test_the_search_body_is_the_schema_validated_one(client) -> None:  # type: ignore[no-untyped-def]
    from memory.retrieval.search.fold import hits_with_folds
    from memory.retrieval.search.query import SearchQuery
    from memory.retrieval.search.service import search

    seed()
    for q in ("connection pool", "pool", ""):
        response = client.get("/api/search", {"q": q, "mode": "keyword"})
        assert response.status_code == 200
        assert response["Content-Type"] == "application/json; charset=utf-8"
        body = response.json()
        assert body["results"]
        hits = hits_with_folds(search(SearchQuery(text=q, mode="keyword")))
        validated = SearchOut.model_validate(
            {"query": q, "mode": "keyword", "note": "", "results": hits}
        ).model_dump()
        assert body == json.loads(json.dumps(validated, cls=NinjaJSONEncoder))
        assert list(body["results"][0]) == list(SearchOut.model_fields["results"].annotation.__args__[0].model_fields)  # type: ignore[union-attr]  # fmt: skip


@pytest.mark.django_db
def test_the_observations_body_is_the_schema_validated_one(client) -> None:  # type: ignore[no-untyped-def]
    from memory.api.retrieval import ObservationsOut
    from memory.models import Observation

    ids = seed()["observation"]
    # Microseconds and a prompt number: the raw read must convert them as the ORM does.
    Observation.objects.filter(pk=ids[0]).update(
        created=datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC), prompt_number=3
    )
    wanted = [ids[2], 999_999, ids[0], ids[2]]
    response = client.get("/api/observations", {"ids": ",".join(map(str, wanted))})
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    rows = Observation.objects.in_bulk(wanted)
    validated = ObservationsOut.model_validate(
        {"observations": [rows[ids[2]].as_dict(), rows[ids[0]].as_dict()], "missing": [999_999]}
    ).model_dump()
    assert response.json() == json.loads(json.dumps(validated, cls=NinjaJSONEncoder))


@pytest.mark.django_db
def test_the_health_body_is_the_schema_validated_one() -> None:
    from django.test import Client

    from memory.api.core import HealthOut
    from memory.runtime.credentials import OWNER_SOCKET_ENVIRON

    for owner in (True, False):
        response = Client(**{OWNER_SOCKET_ENVIRON: owner}).get("/api/health")
        assert response.status_code == 200
        assert response["Content-Type"] == "application/json; charset=utf-8"
        expected = {"status": "ok", "service": "cmem", "version": config.VERSION,
                    "protocol": config.PROTOCOL_VERSION, **({"pid": os.getpid()} if owner else {})}  # fmt: skip
        assert response.json() == HealthOut(**expected).model_dump(exclude_none=True)


@pytest.mark.django_db
def test_one_kind_read_by_the_rank_statement_equals_the_separate_read() -> None:
    # A search of one kind's first page reads its rows in the rank's own statement; the
    # hits are those the rank-then-read path gives (filters, joins, fallback included).
    from django.db import connection

    from memory.retrieval.search import sqlite
    from memory.retrieval.search.query import SearchQuery

    if connection.vendor != "sqlite":
        pytest.skip("the SQLite backend's fast path")
    seed()
    queries = [
        SearchQuery(text="connection pool", kinds=("observation",)),
        SearchQuery(text="pool", kinds=("observation",), types=("bugfix",), limit=1),
        SearchQuery(text="connection", kinds=("summary",), project="shop"),
        SearchQuery(text="why is the pool leaking", kinds=("observation",)),
        SearchQuery(text="checkout", kinds=("prompt",), project="shop"),
        SearchQuery(text="migration", kinds=("prompt",)),
    ]
    found = 0
    for query in queries:
        ranked, match, _ = sqlite.keyword_ranked(query)
        separate = sqlite._hydrate(ranked[: query.limit], match)
        assert sqlite.search_sqlite(query) == separate
        found += bool(separate)
    assert found >= 4
