"""Issue 33: vectors searched from an int8 copy on disk (RSS flat in the rows), and the
embedding model unloaded after an idle period."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.db import connection

from memory.models import Embedding, Observation, Session
from memory.retrieval.embeddings import index, model, ondisk, store, vector_index
from memory.retrieval.search.query import SearchQuery
from memory.retrieval.search.service import search

pytestmark = pytest.mark.django_db

SYNTHETIC = "synthetic@0"
DIM = 384


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _store(vectors: np.ndarray, first_id: int = 1) -> list[int]:
    """Vectors as the embedder stores them (float16), for object ids from `first_id`."""
    ids = list(range(first_id, first_id + len(vectors)))
    Embedding.objects.bulk_create(
        (
            Embedding(kind="observation", object_id=pk, model=SYNTHETIC, vector=v.astype(np.float16).tobytes())
            for pk, v in zip(ids, vectors, strict=True)
        ),
        batch_size=2000,
    )  # fmt: skip
    return ids


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.fixture
def synthetic() -> np.ndarray:
    """5,000 random unit vectors (three chunks of the copy), clustered a little so that
    near neighbours are close calls, as real embeddings are."""
    rng = np.random.default_rng(33)
    centres = _unit(rng, 40)
    vectors = centres[rng.integers(0, 40, 5000)] + 0.6 * _unit(rng, 5000)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    _store(vectors)
    return vectors


def _queries(vectors: np.ndarray, n: int = 50) -> np.ndarray:
    rng = np.random.default_rng(7)
    queries = vectors[rng.integers(0, len(vectors), n)] + 0.3 * _unit(rng, n)
    return queries / np.linalg.norm(queries, axis=1, keepdims=True)


@pytest.fixture(params=["whole scan", "coarse pass"])
def coarse(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each test twice: scanning every row's codes, and (COARSE_FROM forced down to 0, as a
    copy of 20k rows or more is searched) through the sign bits first; the list counts the
    coarse passes taken."""
    if request.param == "coarse pass":
        monkeypatch.setattr(ondisk, "COARSE_FROM", 0)
    return _count_coarse_passes(monkeypatch)


def _count_coarse_passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    passes: list[int] = []
    hamming = ondisk._hamming_nearest

    def counted(*args: Any) -> np.ndarray:
        passes.append(1)
        return hamming(*args)

    monkeypatch.setattr(ondisk, "_hamming_nearest", counted)
    return passes


def test_the_disk_copy_ranks_as_the_exact_float_scan(
    synthetic: np.ndarray, coarse: list[int], request: pytest.FixtureRequest
) -> None:
    """recall@10 against the in-heap float32 scan, and the same scores for the rows both
    return (the candidates are re-scored from the stored vectors)."""
    found = total = 0
    for query in _queries(synthetic):
        exact = index.nearest("observation", SYNTHETIC, query, k=10)
        disk = ondisk.nearest("observation", SYNTHETIC, query, k=10)
        total += len(exact)
        found += len({pk for _, pk in exact} & {pk for _, pk in disk})
        scores = {pk: s for s, pk in exact}
        for score, pk in disk:
            if pk in scores:
                assert score == pytest.approx(scores[pk], abs=1e-6)
        assert [s for s, _ in disk] == sorted((s for s, _ in disk), reverse=True)
    assert found / total >= 0.99
    assert len(coarse) == (50 if "coarse" in request.node.callspec.id else 0)


def test_filters_and_thresholds_hold_on_the_disk_copy(synthetic: np.ndarray) -> None:
    rng = np.random.default_rng(3)
    small = {int(pk) for pk in rng.choice(np.arange(1, 5001), 300, replace=False)}
    large = {int(pk) for pk in rng.choice(np.arange(1, 5001), ondisk.DIRECT + 500, replace=False)}
    for query in _queries(synthetic, 10):
        for allowed in (small, large):
            exact = index.nearest("observation", SYNTHETIC, query, k=10, allowed=allowed)
            disk = ondisk.nearest("observation", SYNTHETIC, query, k=10, allowed=allowed)
            assert {pk for _, pk in disk} <= allowed
            assert len({pk for _, pk in exact} & {pk for _, pk in disk}) >= 9
        floor = index.nearest("observation", SYNTHETIC, query, k=10)[4][0]
        disk = ondisk.nearest("observation", SYNTHETIC, query, k=10, min_score=floor)
        assert disk and all(score > floor for score, _ in disk) and len(disk) <= 4
    assert ondisk.nearest("observation", SYNTHETIC, synthetic[0], k=5, allowed=set()) == []


def test_the_copy_follows_inserts_deletes_and_re_embeds(
    synthetic: np.ndarray, coarse: list[int]
) -> None:
    target = ondisk.path("observation")
    query = synthetic[17]
    assert ondisk.nearest("observation", SYNTHETIC, query, k=1)[0][1] == 18
    assert target.parent.name == "vectors" and target.stat().st_size == 5000 * (12 + DIM)
    # New rows are appended.
    (new,) = _store(_unit(np.random.default_rng(5), 1), first_id=9001)
    fresh = Embedding.objects.get(object_id=new)
    own = np.frombuffer(fresh.vector, dtype=np.float16).astype(np.float32)
    assert ondisk.nearest("observation", SYNTHETIC, own, k=1)[0][1] == new
    assert ondisk.sync("observation", SYNTHETIC, DIM)["rows"] == 5001
    # A deleted row is never returned and the copy is rebuilt without it.
    Embedding.objects.filter(object_id=18).delete()
    assert 18 not in {pk for _, pk in ondisk.nearest("observation", SYNTHETIC, query, k=20)}
    assert ondisk.sync("observation", SYNTHETIC, DIM)["rows"] == 5000
    # A re-embed (delete, insert under a new id) moves the row to its new vector.
    Embedding.objects.filter(object_id=new).delete()
    _store(synthetic[17:18], first_id=new)
    assert ondisk.nearest("observation", SYNTHETIC, query, k=1)[0][1] == new
    assert ondisk.sync("observation", SYNTHETIC, DIM)["rows"] == 5000


def test_a_damaged_or_deleted_copy_is_rebuilt(synthetic: np.ndarray) -> None:
    query = synthetic[40]
    expected = ondisk.nearest("observation", SYNTHETIC, query, k=10)
    target = ondisk.path("observation")
    target.write_bytes(b"not a copy")  # truncated: shorter than the meta says
    assert ondisk.nearest("observation", SYNTHETIC, query, k=10) == expected
    target.with_suffix(".json").write_text("{broken")
    assert ondisk.nearest("observation", SYNTHETIC, query, k=10) == expected
    ondisk.drop("observation")
    assert ondisk.nearest("observation", SYNTHETIC, query, k=10) == expected
    assert target.exists()


def _bits_of(target: Path) -> np.ndarray:
    return np.frombuffer(target.with_suffix(".bits").read_bytes(), dtype=np.uint64).reshape(-1, 6)


def test_missing_or_stale_sign_bits_are_rebuilt(
    synthetic: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bits file holds row for row the signs of the stored vectors; a copy whose bits
    are missing or short, or one written before the bits existed, is rebuilt with them."""
    monkeypatch.setattr(ondisk, "COARSE_FROM", 0)
    query = synthetic[40]
    expected = ondisk.nearest("observation", SYNTHETIC, query, k=10)
    target = ondisk.path("observation")
    stored = np.frombuffer(
        b"".join(Embedding.objects.order_by("id").values_list("vector", flat=True)),
        dtype=np.float16,
    ).reshape(-1, DIM)
    signs = np.packbits(stored > 0, axis=1).view(np.uint64)
    assert np.array_equal(_bits_of(target), signs)
    bits = target.with_suffix(".bits")
    for damage in ("deleted", "short", "written before the bits"):
        if damage == "deleted":
            bits.unlink()
        elif damage == "short":
            bits.write_bytes(bits.read_bytes()[:480])
        else:
            meta = json.loads(target.with_suffix(".json").read_text())
            del meta["bits"]
            target.with_suffix(".json").write_text(json.dumps(meta))
            bits.write_bytes(bytes(len(bits.read_bytes())))  # all zero: would rank nothing
        assert ondisk.nearest("observation", SYNTHETIC, query, k=10) == expected, damage
        assert np.array_equal(_bits_of(target), signs), damage


def test_the_byte_table_counts_bits_as_numpy_does() -> None:
    words = np.random.default_rng(4).integers(0, 2**63, (50, 6), dtype=np.uint64)
    words[0] = np.iinfo(np.uint64).max
    assert np.array_equal(ondisk._popcount_by_bytes(words), np.bitwise_count(words))


def test_a_copy_of_coarse_size_takes_the_coarse_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """At COARSE_FROM rows, unforced, a search reads the bits first and still finds each
    query's own row and the scan's best rows."""
    rng = np.random.default_rng(20)
    centres = _unit(rng, 200)
    vectors = centres[rng.integers(0, 200, ondisk.COARSE_FROM)] + 0.6 * _unit(
        rng, ondisk.COARSE_FROM
    )
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    _store(vectors)
    passes = _count_coarse_passes(monkeypatch)
    found = total = 0
    for row in (5, 777, 4321, 12_345, ondisk.COARSE_FROM - 1):
        exact = index.nearest("observation", SYNTHETIC, vectors[row], k=10)
        disk = ondisk.nearest("observation", SYNTHETIC, vectors[row], k=10)
        assert disk[0][1] == row + 1
        found += len({pk for _, pk in exact} & {pk for _, pk in disk})
        total += len(exact)
    assert len(passes) == 5 and found / total >= 0.9


def test_searching_the_disk_copy_does_not_hold_the_vectors(synthetic: np.ndarray) -> None:
    """30,000 vectors: the in-heap matrix is 46 MB; the disk path's RSS stays near flat."""
    _store(_unit(np.random.default_rng(9), 25_000), first_id=10_001)
    queries = _queries(synthetic, 20)
    ondisk.nearest("observation", SYNTHETIC, queries[0], k=10)  # the copy is built
    index.release_free_heap()
    before = _rss_mb()
    for query in queries:
        ondisk.nearest("observation", SYNTHETIC, query, k=50)
    disk_growth = _rss_mb() - before
    for query in queries:
        index.nearest("observation", SYNTHETIC, query, k=50)
    scan_growth = _rss_mb() - before
    assert disk_growth < 12, disk_growth
    assert scan_growth > 40, scan_growth  # the measure sees what the matrix costs


def test_search_goes_through_the_disk_copy_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where sqlite-vec cannot load (this Python), `auto` is the disk copy, and a semantic
    search through the service finds a row by meaning from it."""
    monkeypatch.delenv(vector_index.SETTING, raising=False)
    vector_index.clear()
    session = Session.objects.create(session_id="s-1", project="shop")
    for title in ("Refunds reuse compute_total() so partial refunds match checkout",
                  "Redis connection pool exhausted under load"):  # fmt: skip
        Observation.objects.create(session=session, project="shop", title=title)
    store.embed_pending()
    loaded = model.get_model()
    if vec0_loads := not vector_index.vec0.unavailable_reason():
        pytest.skip(f"sqlite-vec loads here ({vec0_loads}): auto measures")
    assert vector_index.choice("observation", loaded.version, loaded.dim) == "disk"
    hits = search(SearchQuery(text="the cache server ran out of connections", mode="semantic",
                              kinds=("observation",)))  # fmt: skip
    assert hits and hits[0].title.startswith("Redis")
    assert ondisk.path("observation").exists()
    with connection.cursor() as cursor:  # the copy is never inside cmem's database
        cursor.execute("SELECT name FROM sqlite_master WHERE name LIKE 'q8%'")
        assert cursor.fetchall() == []


# -- the model unloads when idle ------------------------------------------------------------


@pytest.fixture
def fresh_model() -> Any:
    model.unload_if_idle(0)
    yield
    model.get_model()  # the other tests find it loaded, as before


def test_the_model_unloads_when_idle_and_loads_again_on_use(fresh_model: Any) -> None:
    first = model.get_model()
    vector = first.embed(["redis connection pool"])
    assert model.loaded()
    pid = first.pid()
    assert pid is not None
    assert not model.unload_if_idle(3600)  # used a moment ago
    assert model.unload_if_idle(0)
    assert not model.loaded()
    assert not Path(f"/proc/{pid}").exists()  # the encoder's process has ended, reaped
    again = model.get_model()
    assert np.array_equal(again.embed(["redis connection pool"]), vector)
    assert again.pid() not in (None, pid)


def test_a_model_in_use_is_never_unloaded(fresh_model: Any) -> None:
    loaded = model.get_model()
    texts = ["a long text about refunds and the checkout totals " * 20] * 200
    worker = threading.Thread(target=loaded.embed, args=(texts,))
    worker.start()
    try:
        deadline = time.monotonic() + 10
        while not (model.in_flight() and model.loaded()) and time.monotonic() < deadline:
            time.sleep(0.001)
        assert model.in_flight()
        assert not model.unload_if_idle(0)
        assert model.loaded()
    finally:
        worker.join(60)
    assert model.unload_if_idle(0)


def test_the_watcher_unloads_after_the_setting(
    fresh_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(model.IDLE_SETTING, "1")
    model.get_model().embed(["coupon expiry"])
    deadline = time.monotonic() + 15
    while model.loaded() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not model.loaded()
    monkeypatch.setenv(model.IDLE_SETTING, "0")  # 0 keeps it
    model.get_model().embed(["coupon expiry"])
    time.sleep(0.5)
    assert model.loaded() and not model.unload_if_idle()
