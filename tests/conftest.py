from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import LiveWorker, free_port, make_worker_env


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test gets its own data dir; services read it through memory.config at call time."""
    path = tmp_path / "cmem-data"
    path.mkdir(mode=0o700)
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(path))
    return path


@pytest.fixture(autouse=True)
def _huey_immediate() -> Iterator[None]:
    from huey.contrib.djhuey import HUEY

    HUEY.immediate = True
    # Delayed tasks park in an in-memory schedule (tests/support/huey_tasks.py runs them);
    # none may leak from one test into the next.
    HUEY.flush()
    yield


@pytest.fixture(autouse=True)
def _fast_hasher(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def live_worker(tmp_path: Path) -> Iterator[LiveWorker]:
    data = tmp_path / "worker-data"
    data.mkdir(mode=0o700)
    port = free_port()
    worker = LiveWorker(data_dir=data, port=port, env=make_worker_env(data, port))
    worker.start()
    try:
        yield worker
    finally:
        worker.stop()


@pytest.fixture(autouse=True)
def _vector_index_cache() -> Iterator[None]:
    """Each test's rows are rolled back, and with them the vector generation counter: a
    matrix cached by one test could look current to the next. A serving process never sees
    rolled-back vectors (the consumer writes them, the server only reads committed ones)."""
    yield
    from memory.retrieval.embeddings import index

    index.clear()
