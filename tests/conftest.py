from __future__ import annotations

import contextlib
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
def _test_client_is_owner(monkeypatch: pytest.MonkeyPatch) -> None:
    """Django's test client speaks for the owner, as the hook does over the Unix socket.

    It sets the same WSGI environ mark cmem_site/wsgi.py sets for Unix-socket connections;
    no HTTP request can carry that key (headers become HTTP_*), so production has no bypass.
    A test of the refusal passes `**{OWNER_SOCKET_ENVIRON: False}` or uses the real server.
    """
    from django.test.client import RequestFactory

    from memory.runtime.credentials import OWNER_SOCKET_ENVIRON

    base = RequestFactory._base_environ

    def owner_environ(self: RequestFactory, **request: object) -> dict[str, object]:
        if OWNER_SOCKET_ENVIRON in self.defaults:  # Client(**{OWNER_SOCKET_ENVIRON: False})
            return base(self, **request)
        return base(self, **{OWNER_SOCKET_ENVIRON: True, **request})

    monkeypatch.setattr(RequestFactory, "_base_environ", owner_environ)


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


@pytest.fixture(autouse=True, scope="session")
def _no_worker_outlives_the_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """At the end of the run, stop any worker a test started and left running in its temporary
    data dir (a hook that found the worker down starts one, detached): a supervisor is told
    to stop (SIGTERM), which stops its serving process with it."""
    yield
    import os
    import signal

    base = str(tmp_path_factory.getbasetemp())
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            env = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        is_worker = b"serve-process" in argv or (
            b"serve" in argv and (b"--supervise" in argv or any(a.endswith(b"/cmem") for a in argv))
        )
        prefix = b"CLAUDE_MEM_DATA_DIR="
        data = next((v[len(prefix) :] for v in env if v.startswith(prefix)), b"").decode(
            errors="replace"
        )
        if is_worker and data.startswith(base):
            with contextlib.suppress(OSError):
                os.kill(int(proc.name), signal.SIGTERM)
