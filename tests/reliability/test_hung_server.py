"""A serving process that is alive but answers nothing is restarted like a crashed one.

Attacked on a real `cmem serve`: the serving process is frozen with SIGSTOP (alive, its
sockets held, nothing answered: what a deadlock or a dead listener thread looks like from
outside), and separately its Unix socket is taken away (the TCP listener still answers,
the hooks' own socket does not). Each time the supervisor's liveness probe notices within
its misses, kills the process and starts a new one that answers on both; a healthy worker
is never restarted by the probe. The probe runs every 0.5 s here (CMEM_LIVENESS_EVERY_S)
instead of every 10 s.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.worker.supervisor import LIVENESS_MISSES
from tests.reliability.helpers import (
    Session,
    children,
    health_ok,
    hook,
    new_worker,
    scalar,
    wait_for,
)
from tests.support import LiveWorker

pytestmark = pytest.mark.slow

EVERY_S = 0.5


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[LiveWorker]:
    """A running worker whose supervisor probes its server every EVERY_S."""
    live = new_worker(tmp_path, CLAUDE_MEM_COMPRESSOR="offline", CMEM_LIVENESS_EVERY_S=str(EVERY_S))
    live.start()
    try:
        yield live
    finally:
        live.stop()


def test_a_frozen_server_is_killed_and_restarted(worker: LiveWorker, tmp_path: Path) -> None:
    first = children(worker.data_dir)["server"]
    # Healthy: a dozen probes pass and nothing is restarted.
    time.sleep(EVERY_S * (LIVENESS_MISSES + 3))
    assert children(worker.data_dir)["server"] == first and health_ok(worker)

    os.kill(first, signal.SIGSTOP)
    # Frozen: the port is held, nothing answers (once every thread has stopped).
    wait_for(lambda: not health_ok(worker), 5, "the stopped server to stop answering")
    wait_for(
        lambda: children(worker.data_dir)["server"] != first and health_ok(worker),
        60,
        "the frozen server's replacement",
    )
    wait_for(lambda: _gone(first), 10, "the frozen server to be gone")
    # The replacement serves the hooks' socket too: a capture is stored.
    result, _ = hook(worker.env, "observation", Session(tmp_path).bash(1))
    assert result.returncode == 0 and not result.stderr, result.stderr
    db = worker.data_dir / "cmem.sqlite3"
    wait_for(lambda: scalar(db, "SELECT count(*) FROM memory_event") == 1, 20, "the event")


def test_a_server_whose_hook_socket_is_gone_is_restarted(
    worker: LiveWorker, tmp_path: Path
) -> None:
    first = children(worker.data_dir)["server"]
    (worker.data_dir / "worker.sock").unlink()
    assert health_ok(worker)  # TCP still answers: only the hooks' socket is lost
    wait_for(
        lambda: (
            children(worker.data_dir)["server"] != first
            and (worker.data_dir / "worker.sock").exists()
            and health_ok(worker)
        ),
        60,
        "a server with its socket back",
    )
    result, _ = hook(worker.env, "observation", Session(tmp_path).bash(2))
    assert result.returncode == 0 and not result.stderr, result.stderr
