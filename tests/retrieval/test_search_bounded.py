"""Bounded work in a search by meaning: a filtered search reads the nearest rows of a wider
set and checks the filters on those by primary key (`sqlite.nearest`), and a query text
is embedded once (`hybrid.embedded_text`). Each answer must be the one the exact path
gives: the same rows, in the same order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from memory.models import Embedding, Observation, Session
from memory.retrieval.embeddings import index, vector_index
from memory.retrieval.embeddings.model import model_version
from memory.retrieval.search import hybrid, sqlite
from memory.retrieval.search.query import SearchQuery

pytestmark = pytest.mark.django_db

START = datetime(2026, 3, 1, tzinfo=UTC)
DIM = 384


def _store(sizes: dict[str, int], query: np.ndarray) -> dict[str, list[int]]:
    """`sizes[project]` observations per project, each vector the query's direction plus
    noise (so every cosine is well above MIN_SIMILARITY, and all differ)."""
    rng = np.random.default_rng(33)
    ids: dict[str, list[int]] = {}
    for project, count in sizes.items():
        session = Session.objects.create(session_id=f"s-{project}", project=project, started=START)
        rows = Observation.objects.bulk_create(
            Observation(session=session, project=project, type="change", title=f"{project} {n}",
                        narrative="", created=START + timedelta(minutes=n))
            for n in range(count)
        )  # fmt: skip
        vectors = query + rng.standard_normal((count, DIM)).astype(np.float32) * 0.05
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        Embedding.objects.bulk_create(
            Embedding(kind="observation", object_id=row.pk, model=model_version(),
                      vector=vec.astype(np.float16).tobytes())
            for row, vec in zip(rows, vectors, strict=True)
        )  # fmt: skip
        ids[project] = [row.pk for row in rows]
    index.clear()
    return ids


@pytest.fixture
def direction() -> np.ndarray:
    vector = np.random.default_rng(7).standard_normal(DIM).astype(np.float32)
    return vector / np.linalg.norm(vector)


def _exact(query: SearchQuery, vector: np.ndarray, k: int) -> list[tuple[float, int]]:
    """The rows the filters allow, all of them scanned: what every path must answer."""
    allowed = sqlite.allowed_ids("observation", query, hybrid.FILTER_SCAN_BOUND)
    return vector_index.nearest(
        "observation", model_version(), vector, k=k, allowed=allowed, min_score=0.2
    )


def _same(got: list[tuple[float, int]], expected: list[tuple[float, int]]) -> bool:
    """The same rows in the same order, the same cosines (to float32 rounding: a matrix
    product over another set of rows sums in another order)."""
    return [pk for _, pk in got] == [pk for _, pk in expected] and np.allclose(
        [score for score, _ in got], [score for score, _ in expected], atol=1e-5
    )


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    real = vector_index.nearest

    def nearest(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(vector_index, "nearest", nearest)
    return calls


def test_a_large_project_reads_the_kinds_nearest_and_keeps_its_own(
    direction: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _store({"big": 300, "other": 300}, direction)
    # Rows no longer true drop out, as the status filter says, wherever they rank.
    Observation.objects.filter(pk__in=ids["big"][::3]).update(status="outdated")
    query = SearchQuery(text="x", project="big", mode="semantic", kinds=("observation",))
    expected = _exact(query, direction, 10)
    calls = _spy(monkeypatch)
    got = sqlite.nearest("observation", query, model_version(), direction, 10, [])
    assert _same(got, expected) and len(got) == 10
    assert {pk for _, pk in got} <= set(ids["big"]) - set(ids["big"][::3])
    # One unfiltered read of the kind's nearest: twice what is needed over the share (1/2).
    assert [(call["k"], call.get("allowed")) for call in calls] == [(40, None)]


def test_a_small_project_is_searched_through_its_own_ids(
    direction: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _store({"small": 30, "other": 400}, direction)
    Observation.objects.filter(pk__in=ids["small"][:5]).update(status="wrong")
    query = SearchQuery(text="x", project="small", mode="semantic", kinds=("observation",))
    expected = _exact(query, direction, 10)
    calls = _spy(monkeypatch)
    got = sqlite.nearest("observation", query, model_version(), direction, 10, [])
    assert _same(got, expected) and len(got) == 10
    # Its ids whatever their status (the project's index alone), then the status by key.
    assert len(calls) == 1 and calls[0]["allowed"] == set(ids["small"])


def test_a_wider_read_left_short_by_the_filter_falls_back_to_the_exact_scan(
    direction: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _store({"big": 300, "other": 300}, direction)
    # Most of the project is no longer true: the 40 nearest keep fewer than 10.
    Observation.objects.filter(pk__in=ids["big"][10:]).update(status="outdated")
    query = SearchQuery(text="x", project="big", mode="semantic", kinds=("observation",))
    expected = _exact(query, direction, 10)
    calls = _spy(monkeypatch)
    got = sqlite.nearest("observation", query, model_version(), direction, 10, [])
    assert _same(got, expected) and {pk for _, pk in got} == set(ids["big"][:10])
    assert len(calls) == 2 and calls[1]["allowed"] == set(ids["big"][:10])


def test_other_filters_search_exactly_the_rows_they_allow(
    direction: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    _store({"big": 300, "other": 300}, direction)
    query = SearchQuery(
        text="x", project="big", types=("change",), mode="semantic", kinds=("observation",)
    )
    expected = _exact(query, direction, 10)
    calls = _spy(monkeypatch)
    assert _same(sqlite.nearest("observation", query, model_version(), direction, 10, []), expected)
    assert len(calls) == 1 and calls[0]["allowed"] is not None


class _CountingModel:
    version = model_version()

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts += texts
        return np.full((len(texts), DIM), 1 / np.sqrt(DIM), dtype=np.float32)


def test_a_query_text_is_embedded_once_and_the_oldest_leaves_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = _CountingModel()
    monkeypatch.setattr(hybrid, "get_model", lambda: model)
    monkeypatch.setattr(hybrid, "_query_vectors", type(hybrid._query_vectors)())
    monkeypatch.setattr(hybrid, "QUERY_CACHE", 2)
    first = hybrid.embedded_text("redis pool")
    again = hybrid.embedded_text("redis pool")
    assert model.texts == ["redis pool"] and again[1] is first[1]
    assert again[0] == model_version()
    with pytest.raises(ValueError):
        first[1][0] = 0.0  # shared by every search of the text: never written to
    hybrid.embedded_text("refunds")
    hybrid.embedded_text("redis pool")  # most recent again
    hybrid.embedded_text("coupons")  # evicts "refunds", the least recently used
    hybrid.embedded_text("redis pool")
    hybrid.embedded_text("refunds")
    assert model.texts == ["redis pool", "refunds", "coupons", "refunds"]
