"""Search by meaning on PostgreSQL (team mode): vectors in `memory_embedding` (bytea, no
pgvector on this server), the same scan, the same fusion, and the delete triggers."""

from __future__ import annotations

import pytest
from django.db import connection

from memory.models import Embedding, Observation, Session
from memory.retrieval.embeddings import store
from memory.retrieval.search.query import HIGHLIGHT_OPEN, SearchQuery
from memory.retrieval.search.service import search

pytestmark = [pytest.mark.django_db, pytest.mark.team, pytest.mark.usefixtures("pg_backend")]

PARAPHRASE = "why did money given back to buyers disagree with what they paid at purchase"


@pytest.fixture
def rows() -> dict[str, int]:
    shop = Session.objects.create(session_id="s-shop", project="shop")
    infra = Session.objects.create(session_id="s-infra", project="infra")
    ids = {
        "refunds": Observation.objects.create(
            session=shop, project="shop", type="bugfix",
            title="Refunds reuse compute_total() so partial refunds match checkout",
            narrative="Refund amounts were computed with their own rounding; the refund path now calls compute_total().",
        ).pk,
        "webhooks": Observation.objects.create(
            session=shop, project="shop", type="bugfix", title="Stripe webhook retries created duplicate orders",
            narrative="Idempotency key stored per event id.",
        ).pk,
        "redis": Observation.objects.create(
            session=infra, project="infra", type="bugfix", title="Redis connection pool exhausted under load",
            narrative="A shared pool with max 50 connections fixed the spikes.",
        ).pk,
    }  # fmt: skip
    store.embed_pending()
    return ids


def _ids(**kwargs: object) -> list[int]:
    return [h.id for h in search(SearchQuery(kinds=("observation",), **kwargs))]  # type: ignore[arg-type]


def test_each_mode_on_postgres(rows: dict[str, int]) -> None:
    assert connection.vendor == "postgresql"
    assert Embedding.objects.count() == 3
    assert _ids(text=PARAPHRASE, mode="semantic")[0] == rows["refunds"]
    assert rows["refunds"] in _ids(text=PARAPHRASE, mode="hybrid")[:2]
    assert _ids(text="webhook idempotency", mode="hybrid")[0] == rows["webhooks"]
    hit = search(SearchQuery(text="refund rounding", mode="hybrid"))[0]
    assert hit.id == rows["refunds"] and hit.highlights
    assert HIGHLIGHT_OPEN not in hit.snippet


def test_filters_hold_on_postgres(rows: dict[str, int]) -> None:
    for mode in ("semantic", "hybrid"):
        assert rows["refunds"] not in _ids(text=PARAPHRASE, mode=mode, project="infra")
        assert _ids(text=PARAPHRASE, mode=mode, project="shop")[0] == rows["refunds"]


def test_vectors_follow_rows_on_postgres(rows: dict[str, int]) -> None:
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM memory_observation WHERE id = %s", [rows["redis"]])
    assert not Embedding.objects.filter(object_id=rows["redis"]).exists()
    Session.objects.filter(project="shop").delete()
    assert not Embedding.objects.exists()
    assert _ids(text=PARAPHRASE, mode="semantic") == []


def test_the_fallback_scan_is_bounded_and_adds_the_keyword_candidates(
    rows: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without pgvector (this server), only the newest FALLBACK_SCAN_BOUND vectors are
    scanned; a keyword candidate older than that is still scored by its own vector."""
    import numpy as np

    from memory.retrieval.embeddings import index, pgvector
    from memory.retrieval.embeddings.model import get_model
    from memory.retrieval.search import hybrid
    from memory.retrieval.search.postgres import PostgresBackend

    assert not pgvector.ready()
    monkeypatch.setattr(hybrid, "FALLBACK_SCAN_BOUND", 1)
    index.clear()
    model = get_model()
    vector = model.embed([PARAPHRASE])[0]
    query = SearchQuery(text=PARAPHRASE, kinds=("observation",), mode="semantic")
    scanned = PostgresBackend.nearest("observation", query, model.version, vector, 10, [])
    assert [pk for _, pk in scanned] in ([], [rows["redis"]])  # the newest row only
    with_candidate = PostgresBackend.nearest(
        "observation", query, model.version, vector, 10, [rows["refunds"]]
    )
    assert with_candidate[0][1] == rows["refunds"]
    assert with_candidate[0][0] == pytest.approx(
        float(
            np.frombuffer(
                bytes(Embedding.objects.get(kind="observation", object_id=rows["refunds"]).vector),
                dtype=np.float16,
            ).astype(np.float32)
            @ vector
        ),
        abs=1e-5,
    )


def test_coverage_and_rows_waiting_on_postgres(rows: dict[str, int]) -> None:
    """The fusion's keyword weight reads the rows' tsvectors; rows without a vector are
    counted and still found by their words in semantic mode, as on SQLite."""
    from memory.retrieval.search.hybrid import mode_note
    from memory.retrieval.search.postgres import term_coverage

    webhooks = ("observation", rows["webhooks"])
    assert term_coverage([webhooks], "the duplicate of orders refunds") == pytest.approx(2 / 3)
    assert term_coverage([webhooks], "duplicates") == 1.0  # stemmed as the index stems
    session = Session.objects.get(session_id="s-shop")
    waiting = Observation.objects.create(
        session=session, project="shop", type="discovery",
        title="Giraffe invoices are rounded twice", narrative="Imported, not embedded yet.",
    )  # fmt: skip
    assert store.waiting() == 1
    assert "1 row(s) have no vector yet" in mode_note("semantic")
    found = search(SearchQuery(text="giraffe invoices", mode="semantic"))
    assert waiting.pk in [hit.id for hit in found]
    store.embed_pending()
    assert store.waiting() == 0 and mode_note("hybrid") == ""


def test_a_filtered_fallback_scan_reads_only_the_rows_it_allows(
    rows: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without pgvector a project's search by meaning reads that project's vectors a slice at
    a time, never the kind's whole matrix (1.5 GB per worker at 1M rows)."""
    from memory.retrieval.embeddings import index, pgvector
    from memory.retrieval.embeddings.model import get_model
    from memory.retrieval.search.postgres import PostgresBackend

    assert not pgvector.ready()
    monkeypatch.setattr(index, "SLICE", 1)  # one row per read: the slices must add up
    index.clear()
    model = get_model()
    vector = model.embed([PARAPHRASE])[0]
    query = SearchQuery(text=PARAPHRASE, kinds=("observation",), mode="semantic", project="shop")
    near = PostgresBackend.nearest("observation", query, model.version, vector, 10, [])
    assert [pk for _, pk in near][0] == rows["refunds"]
    assert rows["redis"] not in [pk for _, pk in near]
    assert not index._cache  # no matrix was loaded
