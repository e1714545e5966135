from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import LiveWorker, free_port, make_worker_env
from tests.support.processes import Leftover, wait_for_leftovers

# The data dir tests/testenv.py made for the whole run.
TESTENV_DATA = os.environ["CLAUDE_MEM_DATA_DIR"]
_LEFTOVERS = pytest.StashKey[list[Leftover]]()


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
    from memory.retrieval.embeddings import index, ondisk

    index.clear()
    ondisk.clear()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A test stops what it starts. Whatever is still running when the run ends fails the run,
    named with the test that started it; then it is killed, so the machine is not left with it."""
    from memory.retrieval.embeddings import model

    model.close_all()  # the encoder's process belongs to this run's process, not to a test
    base = session.config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    left = wait_for_leftovers([str(base), TESTENV_DATA])
    if not left:
        return
    session.config.stash[_LEFTOVERS] = left
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
    for proc in left:
        with contextlib.suppress(OSError):
            os.kill(proc.pid, signal.SIGKILL)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    left = terminalreporter.config.stash.get(_LEFTOVERS, [])
    if left:
        terminalreporter.section("processes the tests left running", red=True)
        for proc in left:
            terminalreporter.write_line(str(proc))
        terminalreporter.write_line("(each test stops what it starts; these were killed)")
