"""Issue 33: no search waits for the on-disk copy to be written. The first copy (and a large
append) is built in a background thread while search answers by keyword with a note (or
from the copy as it stands); the minute sweep keeps existing copies current.

These tests run with background work really in the background (`HUEY.immediate` off) and
committed rows (`transaction=True`), since the building thread reads them on a connection
of its own."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from huey.contrib.djhuey import HUEY

from memory.models import Embedding, Observation, Session
from memory.retrieval import embeddings
from memory.retrieval.embeddings import ondisk, store, vector_index
from memory.retrieval.embeddings.model import model_version
from memory.retrieval.search.query import SearchQuery
from memory.retrieval.search.service import effective_mode, mode_note, search

pytestmark = pytest.mark.django_db(transaction=True)

SYNTHETIC = "synthetic@0"
DIM = 384


@pytest.fixture(autouse=True)
def background(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(HUEY, "immediate", False)
    monkeypatch.setenv(vector_index.SETTING, "disk")
    vector_index.clear()
    ondisk.clear()  # an earlier test's copy of this database would be "a copy to answer from"
    yield
    _wait_built()


def _unit(n: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _store(vectors: np.ndarray, first_id: int, model: str = SYNTHETIC) -> None:
    Embedding.objects.bulk_create(
        (
            Embedding(kind="observation", object_id=first_id + n, model=model, vector=v.astype(np.float16).tobytes())
            for n, v in enumerate(vectors)
        ),
        batch_size=2000,
    )  # fmt: skip


def _wait_built(within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while any(ondisk.building(kind) for kind in ("observation", "summary", "prompt")):
        assert time.monotonic() < deadline, "the background build did not finish"
        time.sleep(0.02)


def test_a_small_first_copy_is_built_by_the_search_itself() -> None:
    vectors = _unit(500, 6)
    _store(vectors, first_id=1)
    assert ondisk.nearest("observation", SYNTHETIC, vectors[3], k=1)[0][1] == 4
    assert not ondisk.building("observation") and embeddings.available()


def test_a_large_first_copy_is_built_in_the_background() -> None:
    count = ondisk.INLINE_APPEND + 1000
    vectors = _unit(count, 1)
    _store(vectors, first_id=1)
    assert not ondisk.path("observation").exists()
    started = time.monotonic()
    assert ondisk.nearest("observation", SYNTHETIC, vectors[10], k=5) == []  # not waited for
    assert time.monotonic() - started < 1.0
    assert not embeddings.available()
    assert "being built in the background" in embeddings.unavailable_note()
    _wait_built()
    assert embeddings.available() and embeddings.unavailable_note() == ""
    assert ondisk.nearest("observation", SYNTHETIC, vectors[10], k=5)[0][1] == 11
    assert ondisk.sync("observation", SYNTHETIC, DIM)["rows"] == count


def test_a_large_append_answers_from_the_copy_as_it_stands_meanwhile() -> None:
    first = _unit(1000, 2)
    _store(first, first_id=1)
    ondisk.sync("observation", SYNTHETIC, DIM)  # a current copy of 1,000
    later = _unit(ondisk.INLINE_APPEND + 500, 3)
    _store(later, first_id=100_001)
    # Too many new rows to append on a search's time: the copy answers as it stands (the
    # old rows found, exactly scored), with no note, while the rest is appended.
    assert ondisk.nearest("observation", SYNTHETIC, first[5], k=1)[0][1] == 6
    assert embeddings.available()
    _wait_built()
    assert ondisk.nearest("observation", SYNTHETIC, later[7], k=1)[0][1] == 100_008
    assert ondisk.sync("observation", SYNTHETIC, DIM)["rows"] == 1000 + len(later)


def test_a_few_new_rows_are_appended_by_the_search_itself() -> None:
    first = _unit(500, 4)
    _store(first, first_id=1)
    ondisk.sync("observation", SYNTHETIC, DIM)
    (new,) = _unit(1, 5)
    _store(new[None, :], first_id=9001)
    assert ondisk.nearest("observation", SYNTHETIC, new, k=1)[0][1] == 9001
    assert not ondisk.building("observation")


def test_the_sweep_keeps_an_existing_copy_current_and_builds_no_first_one() -> None:
    session = Session.objects.create(session_id="s-bg", project="shop")
    Observation.objects.create(session=session, project="shop", title="Redis pool exhausted")
    store.embed_pending()
    version = model_version()
    assert vector_index.prepare_copies() == 0  # no copy yet: left to the first search
    assert not ondisk.path("observation").exists()
    ondisk.sync("observation", version, DIM)
    Observation.objects.create(session=session, project="shop", title="Coupon expiry off by one")
    store.embed_pending()
    assert vector_index.prepare_copies() == 2
    meta = ondisk.sync("observation", version, DIM)
    assert meta["rows"] == meta["count"] == 2


def test_a_search_that_finds_no_copy_answers_by_keyword_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ondisk, "INLINE_APPEND", 0)  # two rows stand for a large store
    # Two rows are written in a blink: the building thread waits for the test to have read
    # the note, as a large store's build would still be running then.
    release = threading.Event()
    real_sync = ondisk.sync

    def held_sync(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name == "cmem-vector-copy":
            release.wait(30)
        return real_sync(*args, **kwargs)

    monkeypatch.setattr(ondisk, "sync", held_sync)
    session = Session.objects.create(session_id="s-bg2", project="shop")
    redis = Observation.objects.create(
        session=session, project="shop", title="Redis connection pool exhausted under load"
    ).pk
    Observation.objects.create(
        session=session, project="shop", title="Refunds reuse compute_total()"
    )
    store.embed_pending()
    query = SearchQuery(text="redis pool", mode="hybrid")
    hits = search(query)
    assert [hit.id for hit in hits] == [redis]  # the keyword answer
    assert "being built in the background" in mode_note(query.mode, query.kinds)
    release.set()
    _wait_built()
    # Built: the next search finds the row by meaning alone.
    meaning = SearchQuery(text="the cache server ran out of connections", mode="semantic")
    hits = search(meaning)
    assert hits and hits[0].id == redis
    assert mode_note(meaning.mode, meaning.kinds) == "" and effective_mode("hybrid") == "hybrid"
