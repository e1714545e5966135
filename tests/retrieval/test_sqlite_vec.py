"""The sqlite-vec path of search by meaning (issue 18) and its fallback to the scan.

Under a Python that can load SQLite extensions (`make test` runs this file a second time
under `.venv-ext`, made from Debian's /usr/bin/python3, with CMEM_SQLITE_VEC_REQUIRED=1)
the sqlite-vec tests run, and fail rather than skip when the extension cannot load. Under
the main venv's Python (no `enable_load_extension`) they skip, and the fallback tests
check that sqlite-vec asked for there keeps the scan and says so.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from django.db import connection

from memory.models import Embedding, Observation, Session
from memory.retrieval.embeddings import index, store, vec0, vector_index
from memory.retrieval.embeddings.model import get_model
from memory.retrieval.search.query import SearchQuery
from memory.retrieval.search.service import search

pytestmark = pytest.mark.django_db

REQUIRED = os.environ.get("CMEM_SQLITE_VEC_REQUIRED") == "1"
START = datetime(2026, 3, 1, tzinfo=UTC)
PROJECTS = ("shop", "infra", "mobile")
SUBJECTS = (
    "refund totals", "coupon expiry", "redis connection pool", "postgres backups",
    "camera permission", "stripe webhook retries", "login rate limit", "image thumbnails",
    "search index rebuild", "session cookies", "email templates", "payment currency",
)  # fmt: skip
ACTIONS = ("fixed", "rewrote", "measured", "documented", "removed", "cached", "tested")
QUERIES = (
    "why did money given back to buyers disagree with what they paid",
    "the cache server ran out of connections during traffic peaks",
    "photos were too large to show in the list",
    "users were locked out after too many attempts",
)


@pytest.fixture
def vec(settings: Any) -> None:
    """The sqlite-vec path, or a skip (a failure under CMEM_SQLITE_VEC_REQUIRED=1)."""
    reason = vec0.unavailable_reason()
    if reason:
        if REQUIRED:
            pytest.fail(f"CMEM_SQLITE_VEC_REQUIRED=1 but {reason}")
        pytest.skip(reason)


@pytest.fixture
def use(monkeypatch: pytest.MonkeyPatch) -> Any:
    def choose(value: str) -> None:
        monkeypatch.setenv(vector_index.SETTING, value)
        vector_index.clear()

    return choose


@pytest.fixture
def rows() -> dict[str, int]:
    """84 observations over three projects, types and dates, all embedded."""
    sessions = {
        p: Session.objects.create(session_id=f"s-{p}", project=p, started=START) for p in PROJECTS
    }
    ids: dict[str, int] = {}
    n = 0
    for subject in SUBJECTS:
        for action in ACTIONS:
            project = PROJECTS[n % 3]
            obs = Observation.objects.create(
                session=sessions[project], project=project,
                type=("bugfix", "feature", "change")[n % 3 if n % 2 else 0],
                title=f"{action.capitalize()} {subject} in {project}",
                narrative=f"The {subject} code was {action}; step {n}.",
                files_modified=[f"{project}/{subject.split()[0]}.py"],
                created=START + timedelta(hours=n),
            )  # fmt: skip
            ids[f"{action} {subject}"] = obs.pk
            n += 1
    store.embed_pending()
    return ids


def _hits(**kwargs: Any) -> list[tuple[int, float]]:
    return [
        (hit.id, round(hit.score, 4))
        for hit in search(SearchQuery(kinds=("observation",), limit=20, **kwargs))
    ]


def _held_in_file() -> set[int]:
    """The ids the vec0 file holds, read by a connection of its own."""
    conn = sqlite3.connect(vec0.path())
    conn.enable_load_extension(True)
    import sqlite_vec

    sqlite_vec.load(conn)
    try:
        return {r[0] for r in conn.execute("SELECT object_id FROM vec_observation").fetchall()}
    finally:
        conn.close()


# -- the fallback: runs under every Python ------------------------------------------------------


def test_sqlite_vec_asked_for_where_it_cannot_load_uses_the_disk_copy_and_says_so(
    rows: dict[str, int], use: Any, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    reason = "this Python's sqlite3 cannot load extensions (test)"
    monkeypatch.setattr(vec0, "unavailable_reason", lambda: reason)
    monkeypatch.setattr(vector_index, "_logged", set())
    use("scan")
    expected = _hits(text=QUERIES[0], mode="semantic")
    use("sqlite-vec")
    with caplog.at_level(logging.WARNING, logger="memory.retrieval.embeddings.vector_index"):
        assert _hits(text=QUERIES[0], mode="semantic") == expected
    model = get_model()
    assert vector_index.choice("observation", model.version, model.dim) == "disk"
    assert any(reason in r.getMessage() and "disk" in r.getMessage() for r in caplog.records)
    level, line = vector_index.describe()
    assert level == "warn" and reason in line
    assert not vec0.path().exists()  # nothing was built


def test_auto_where_it_cannot_load_is_the_disk_copy_without_a_warning(
    use: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vec0, "unavailable_reason", lambda: "no extension loading (test)")
    use("auto")
    assert vector_index.choice("observation", "m", 256) == "disk"
    assert vector_index.describe()[0] == "ok"


def test_this_interpreter_says_why_sqlite_vec_cannot_load() -> None:
    """The main venv's pyenv Python has no enable_load_extension: the reason names it."""
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        pytest.skip("this Python can load extensions")
    assert "enable_load_extension" in vec0.unavailable_reason()


def test_a_bad_setting_is_auto(use: Any) -> None:
    use("faiss")
    assert vector_index.configured() == "auto"


# -- the sqlite-vec path --------------------------------------------------------------------


def test_the_copy_lives_in_its_own_file_never_in_cmems_database(
    vec: None, rows: dict[str, int], use: Any
) -> None:
    use("sqlite-vec")
    assert _hits(text=QUERIES[0], mode="semantic")
    assert vec0.path().is_file() and vec0.path().parent.parent == vec0.path().parents[1]
    assert _held_in_file() == set(rows.values())
    with connection.cursor() as cursor:  # a connection without the extension reads it all
        cursor.execute("SELECT name FROM sqlite_master WHERE sql LIKE '%vec0%'")
        assert cursor.fetchall() == []
        cursor.execute("SELECT count(*) FROM memory_embedding")
        assert cursor.fetchone()[0] == len(rows)


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_both_paths_rank_alike_with_and_without_filters(
    vec: None, rows: dict[str, int], use: Any, mode: str
) -> None:
    filters: list[dict[str, Any]] = [
        {},
        {"project": "infra"},
        {"types": ("feature",)},
        {"file": "redis.py"},
        {"since": START + timedelta(hours=40)},
    ]
    for text in QUERIES:
        for extra in filters:
            use("scan")
            expected = _hits(text=text, mode=mode, **extra)
            use("sqlite-vec")
            assert _hits(text=text, mode=mode, **extra) == expected, (text, extra)
            assert expected or extra


def test_over_fetching_for_a_large_filter_finds_what_the_scan_finds(
    vec: None, rows: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Filters passing more rows than one direct read takes: the copy is asked deeper until
    enough allowed rows are found, and past its limit the filtered rows are scored."""
    model = get_model()
    query = model.embed([QUERIES[1]])[0]
    allowed = {pk for pk, p in Observation.objects.values_list("pk", "project") if p != "shop"}
    expected = index.nearest("observation", model.version, query, k=10, allowed=allowed)
    for max_k in (8, 30, 40):  # below the allowed set's size, so the direct read is skipped
        monkeypatch.setattr(vec0, "MAX_K", max_k)
        monkeypatch.setattr(vec0, "MARGIN", 2)
        got = vec0.nearest("observation", model.version, query, k=10, allowed=allowed)
        assert [pk for _, pk in got] == [pk for _, pk in expected], max_k
        assert np.allclose([s for s, _ in got], [s for s, _ in expected], atol=1e-6)


def test_a_forgotten_observation_never_comes_back_and_leaves_the_file(
    vec: None, rows: dict[str, int], use: Any
) -> None:
    from memory.housekeeping.forget import ForgetRequest, observations_forget

    use("sqlite-vec")
    target = rows["fixed refund totals"]
    assert target in [pk for pk, _ in _hits(text=QUERIES[0], mode="semantic")]
    assert target in _held_in_file()
    observations_forget(request=ForgetRequest(ids=(target,), dry_run=False))
    for mode in ("semantic", "hybrid"):
        assert target not in [pk for pk, _ in _hits(text=QUERIES[0], mode=mode)]
    assert target not in _held_in_file()
    assert target not in vec0.held_ids("observation")


def test_every_way_a_row_goes_purges_its_vector(vec: None, rows: dict[str, int], use: Any) -> None:
    from memory.housekeeping.observations_prune import observations_prune

    use("sqlite-vec")
    assert _hits(text=QUERIES[1], mode="semantic")
    assert _held_in_file() == set(rows.values())
    with connection.cursor() as cursor:  # raw SQL
        cursor.execute(
            "DELETE FROM memory_observation WHERE id = %s", [rows["cached redis connection pool"]]
        )
    Session.objects.filter(project="mobile").delete()  # a session's cascade
    old = Observation.objects.filter(project="shop").order_by("created")[:5]
    pruned = set(old.values_list("pk", flat=True))
    Observation.objects.filter(pk__in=pruned).update(created=START - timedelta(days=3650))
    observations_prune(older_than_days=365, project="shop", dry_run=False)  # prune
    live = set(Embedding.objects.filter(kind="observation").values_list("object_id", flat=True))
    assert rows["cached redis connection pool"] not in live and pruned.isdisjoint(live)
    found = {pk for text in QUERIES for pk, _ in _hits(text=text, mode="semantic")}
    assert found <= live
    assert _held_in_file() == live


def test_a_row_deleted_after_the_sync_is_dropped_from_results_and_purged(
    vec: None, rows: dict[str, int], use: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Results are checked against the live rows even when the copy is stale."""
    use("sqlite-vec")
    target = rows["fixed refund totals"]
    assert target in [pk for pk, _ in _hits(text=QUERIES[0], mode="semantic")]
    monkeypatch.setattr(vec0, "sync", lambda kind, model, dim: len(rows))  # a stale copy
    Observation.objects.filter(pk=target).delete()
    assert target not in [pk for pk, _ in _hits(text=QUERIES[0], mode="semantic")]
    assert target not in _held_in_file()


def test_new_and_re_embedded_rows_reach_the_copy(vec: None, rows: dict[str, int], use: Any) -> None:
    use("sqlite-vec")
    assert _hits(text=QUERIES[2], mode="semantic")
    obs = Observation.objects.create(
        session=Session.objects.get(project="shop"), project="shop",
        title="Pictures in the product list were huge", narrative="Thumbnails now 200 px.",
    )  # fmt: skip
    store.embed_rows("observation", [obs.pk])
    assert _hits(text=QUERIES[2], mode="semantic")[0][0] == obs.pk
    Observation.objects.filter(pk=obs.pk).update(title="Coupon codes", narrative="Expiry dates.")
    store.embed_rows("observation", [obs.pk])  # replaced under a new embedding id
    assert obs.pk not in [pk for pk, _ in _hits(text=QUERIES[2], mode="semantic")[:3]]
    use("scan")
    expected = _hits(text=QUERIES[2], mode="semantic")
    use("sqlite-vec")
    assert _hits(text=QUERIES[2], mode="semantic") == expected


def test_auto_measures_both_keeps_the_faster_and_records_why(
    vec: None, rows: dict[str, int], use: Any, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    model = get_model()
    use("auto")
    with caplog.at_level(logging.INFO, logger="memory.retrieval.embeddings.vector_index"):
        first = vector_index.choice("observation", model.version, model.dim)
    saved = json.loads(vector_index.state_path().read_text())[vec0.source_key()]["observation"]
    assert saved["choice"] == first and saved["count"] == len(rows)
    assert saved["disk_ms"] > 0 and saved["vec_ms"] > 0
    assert (saved["vec_ms"] < saved["disk_ms"]) == (first == "sqlite-vec")
    assert any("measured faster" in r.getMessage() for r in caplog.records)
    assert "auto, measured on this store" in vector_index.describe()[1]
    # Another process reuses the record without measuring again.
    vector_index.clear()
    with monkeypatch.context() as patched:
        patched.setattr(vector_index, "_measure", lambda *a: pytest.fail("measured again"))
        assert vector_index.choice("observation", model.version, model.dim) == first
    # Rigged timings: each path wins once; when the disk copy wins, the vec0 copy is dropped.
    for faster in ("sqlite-vec", "disk"):
        vector_index.state_path().unlink()
        vector_index.clear()
        timings = iter([1.0, 9.0] if faster == "sqlite-vec" else [9.0, 1.0])  # vec, then disk
        monkeypatch.setattr(vector_index, "_median_ms", lambda run, q, t=timings: next(t))
        assert vector_index.choice("observation", model.version, model.dim) == faster
        kept = set(rows.values()) if faster == "sqlite-vec" else set()
        assert vec0.held_ids("observation") == kept
        got = _hits(text=QUERIES[0], mode="semantic")
        use("scan")
        assert got == _hits(text=QUERIES[0], mode="semantic")
        use("auto")


def test_auto_measures_again_when_the_store_has_grown(
    vec: None, rows: dict[str, int], use: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = get_model()
    use("auto")
    vector_index.choice("observation", model.version, model.dim)
    measured: list[int] = []
    real = vector_index._measure

    def spy(kind: Any, model_: str, dim: int, count: int) -> Any:
        measured.append(count)
        return real(kind, model_, dim, count)

    monkeypatch.setattr(vector_index, "_measure", spy)
    monkeypatch.setattr(vector_index, "MIN_REMEASURE", 10)
    monkeypatch.setattr(vector_index, "REMEASURE_GROWTH", 2)
    vector_index.clear()
    vector_index.choice("observation", model.version, model.dim)  # the record stands
    assert measured == []
    session = Session.objects.get(project="shop")
    Observation.objects.bulk_create(
        Observation(session=session, project="shop", title=f"Note {n} on {SUBJECTS[n % 12]}")
        for n in range(len(rows))
    )
    store.embed_pending()  # twice the vectors it was measured at
    vector_index.choice("observation", model.version, model.dim)
    assert measured == [2 * len(rows)]


@pytest.mark.django_db(transaction=True)
def test_auto_measures_in_the_background_while_the_disk_copy_answers(
    vec: None, rows: dict[str, int], use: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No search waits for the measure (the copy of 100k vectors takes seconds to build)."""
    from huey.contrib.djhuey import HUEY

    model = get_model()
    use("auto")
    monkeypatch.setattr(HUEY, "immediate", False)
    started, release = threading.Event(), threading.Event()
    real = vector_index._measure

    def held(*args: Any) -> Any:
        started.set()
        release.wait(30)
        return real(*args)

    monkeypatch.setattr(vector_index, "_measure", held)
    assert vector_index.choice("observation", model.version, model.dim) == "disk"
    assert started.wait(30)
    assert _hits(text=QUERIES[0], mode="semantic")  # answered by the disk copy meanwhile
    assert len(vector_index._measuring) == 1  # one measure, however many searches
    release.set()
    for _ in range(300):
        if not vector_index._measuring:
            break
        time.sleep(0.1)
    decided = vector_index.recorded()["observation"]
    assert decided["count"] == len(rows)
    assert vector_index.choice("observation", model.version, model.dim) == decided["choice"]


def test_a_damaged_or_deleted_copy_is_built_again(
    vec: None, rows: dict[str, int], use: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy is derived: a deleted file, or one that is not a database, is rebuilt."""
    use("scan")
    expected = _hits(text=QUERIES[1], mode="semantic")
    use("sqlite-vec")
    assert _hits(text=QUERIES[1], mode="semantic") == expected
    monkeypatch.setattr(vec0, "_local", threading.local())  # a new process
    vec0.path().unlink()
    assert _hits(text=QUERIES[1], mode="semantic") == expected
    assert _held_in_file() == set(rows.values())
    monkeypatch.setattr(vec0, "_local", threading.local())
    for suffix in ("", "-wal", "-shm"):
        vec0.path().with_name(vec0.path().name + suffix).unlink(missing_ok=True)
    vec0.path().write_bytes(b"not a database" * 100)
    assert _hits(text=QUERIES[1], mode="semantic") == expected
    assert _held_in_file() == set(rows.values())


def test_an_error_from_sqlite_vec_falls_back_to_the_scan_and_says_so(
    vec: None, rows: dict[str, int], use: Any, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    use("scan")
    expected = _hits(text=QUERIES[1], mode="semantic")
    use("sqlite-vec")

    def broken(*args: Any) -> Any:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(vec0, "_knn", broken)
    monkeypatch.setattr(vector_index, "_logged", set())
    with caplog.at_level(logging.WARNING, logger="memory.retrieval.embeddings.vector_index"):
        assert _hits(text=QUERIES[1], mode="semantic") == expected
    assert any("disk I/O error" in r.getMessage() for r in caplog.records)


def test_cmem_doctor_names_the_vector_index(
    rows: dict[str, int], use: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.worker.doctor import _search_checks

    monkeypatch.setattr(vec0, "unavailable_reason", lambda: "no extension loading (test)")
    use("sqlite-vec")
    check = _search_checks()[-1]
    assert check.status == "warn" and "no extension loading (test)" in check.what
    assert "CLAUDE_MEM_VECTOR_INDEX" in check.fix
    use("scan")
    assert _search_checks()[-1].what == "vector index: scan (CLAUDE_MEM_VECTOR_INDEX=scan)"
