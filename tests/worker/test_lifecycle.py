"""`cmem start | status | stop | restart` against real processes in a temp data dir.

Every test runs the real console script in a subprocess, so what is checked is what a user
gets: the detached supervisor, gunicorn (master + worker) and the huey consumer.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from memory.worker import lifecycle
from tests.support import CMEM, free_port, make_worker_env, owner_open

pytestmark = pytest.mark.slow


@dataclass
class Worker:
    data_dir: Path
    port: int
    env: dict[str, str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def cmem(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CMEM, *args], env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def health(self) -> dict[str, object] | None:
        """The owner's view of /api/health (it carries the server pid; a stranger's does not)."""
        try:
            return json.loads(owner_open(self.data_dir, self.url + "/api/health", timeout=2))
        except OSError:
            return None

    def pid(self) -> int:
        return int((self.data_dir / "worker.pid").read_text().split()[0])

    def children(self) -> dict[str, int]:
        return json.loads((self.data_dir / "worker.children").read_text())


@pytest.fixture
def worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Worker]:
    data = tmp_path / "worker-data"
    data.mkdir(mode=0o700)
    port = free_port()
    w = Worker(data_dir=data, port=port, env=make_worker_env(data, port))
    try:
        yield w
    finally:
        # Clean up in-process (a `cmem stop` subprocess costs a Django boot), then make sure.
        monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(data))
        monkeypatch.setenv("CLAUDE_MEM_WORKER_PORT", str(port))
        try:
            lifecycle.worker_stop(timeout=20)
        finally:
            for pid in processes_of(data):  # never leave anything behind, even when a test failed
                os.kill(pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in {"Z", "X"}


def processes_of(data_dir: Path) -> list[int]:
    """Live pids whose environment points at this data dir: every process of this worker."""
    marker = f"CLAUDE_MEM_DATA_DIR={data_dir}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker in environ and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def ps_pids() -> set[int]:
    out = subprocess.run(
        ["ps", "-eo", "pid=,stat="], capture_output=True, text=True, check=True
    ).stdout
    return {int(line.split()[0]) for line in out.splitlines() if line.split()[1][0] != "Z"}


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def wait_for(predicate, timeout: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def all_pids(w: Worker) -> set[int]:
    """The supervisor and its serving process (it answers /api/health and runs the consumer)."""
    health = w.health()
    assert health is not None
    return {w.pid(), *w.children().values(), int(health["pid"])}  # type: ignore[call-overload]


def test_start_status_stop_leaves_nothing_running(worker: Worker) -> None:
    started = worker.cmem("start")
    assert started.returncode == 0, started.stderr
    assert f"{worker.url}/" in started.stdout and f"pid {worker.pid()}" in started.stdout
    assert worker.health()["service"] == "cmem"  # type: ignore[index]

    status = worker.cmem("status")
    assert status.returncode == 0
    assert "cmem is running" in status.stdout and str(worker.pid()) in status.stdout
    assert "0.1.0" in status.stdout and "pending  0" in status.stdout and "uptime" in status.stdout

    as_json = json.loads(worker.cmem("status", "--json").stdout)
    assert as_json["running"] and as_json["answering"] and as_json["pid"] == worker.pid()
    assert as_json["url"] == f"{worker.url}/" and as_json["pending"] == 0

    again = worker.cmem("start")  # starting twice reports the running worker
    assert again.returncode == 0
    assert (
        "already running" in again.stdout
        and f"pid {worker.pid()}" in again.stdout
        and "0.1.0" in again.stdout
    )

    logs = worker.cmem("logs", "-n", "5")
    assert logs.returncode == 0
    assert "worker.out" in logs.stdout and "cmem is running" in logs.stdout

    pids = all_pids(worker)
    assert len(pids) == 2 and pids == set(processes_of(worker.data_dir))  # nothing started twice

    stopped = worker.cmem("stop")
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped" in stopped.stdout
    assert not [pid for pid in pids if alive(pid)]
    assert not pids & ps_pids()
    assert processes_of(worker.data_dir) == []
    assert port_free(worker.port)
    assert not (worker.data_dir / "worker.pid").exists()

    after = worker.cmem("status")
    assert after.returncode == 3 and "not running" in after.stdout
    assert worker.cmem("stop").stdout.strip() == "cmem is not running."


def test_a_stop_right_after_a_start_ends_cleanly(worker: Worker) -> None:
    """The serving process leaves before the interpreter's finalization: granian's Rust
    threads, still winding down, panicked into worker.out ("panic in a function that cannot
    unwind", about one stop in four when it came right after the start)."""
    for _ in range(6):
        assert worker.cmem("start").returncode == 0
        stopped = worker.cmem("stop")
        assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stderr
    out = (worker.data_dir / "logs" / "worker.out").read_text()
    assert out.count("cmem is running") == 6, out
    assert "panicked" not in out and "panic" not in out, out
    assert processes_of(worker.data_dir) == []


def test_a_stale_pid_file_with_a_dead_pid_is_replaced(worker: Worker) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    (worker.data_dir / "worker.pid").write_text(f"{dead.pid}\n")
    (worker.data_dir / "worker.port").write_text(f"127.0.0.1 {worker.port}\n")

    status = worker.cmem("status")
    assert status.returncode == 3 and "stale" in status.stdout and str(dead.pid) in status.stdout

    started = worker.cmem("start")
    assert started.returncode == 0, started.stderr
    assert "stale pid file replaced" in started.stdout and str(dead.pid) in started.stdout
    assert worker.pid() != dead.pid and worker.health() is not None


def test_a_pid_file_naming_a_process_that_is_not_cmem_is_replaced_without_touching_it(
    worker: Worker,
) -> None:
    stranger = subprocess.Popen(["sleep", "120"])
    try:
        (worker.data_dir / "worker.pid").write_text(f"{stranger.pid}\n")
        started = worker.cmem("start")
        assert started.returncode == 0, started.stderr
        assert "not cmem" in started.stdout and "sleep" in started.stdout
        assert worker.pid() != stranger.pid
        assert worker.cmem("stop").returncode == 0
        assert stranger.poll() is None  # cmem never signals a process it does not own
    finally:
        stranger.kill()
        stranger.wait()


def test_a_port_held_by_another_program_gets_a_clear_message(worker: Worker) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", worker.port))
        squatter.listen()
        started = worker.cmem("start")
    assert started.returncode != 0
    assert f"port {worker.port}" in started.stderr and "not cmem" in started.stderr
    assert "CLAUDE_MEM_WORKER_PORT" in started.stderr
    assert not (worker.data_dir / "worker.pid").exists()
    assert processes_of(worker.data_dir) == []


def test_crashes_are_recovered_from(worker: Worker) -> None:
    """kill -9 of the server's or the consumer's process (one serving process runs both): the
    supervisor restarts it. kill -9 of the supervisor: its children follow it, and the next
    start replaces the stale pid file."""
    assert worker.cmem("start").returncode == 0
    supervisor = worker.pid()
    first = worker.children()
    first_worker_pid = worker.health()["pid"]  # type: ignore[index]

    os.kill(first["server"], signal.SIGKILL)
    assert wait_for(lambda: worker.children()["server"] != first["server"])
    assert wait_for(lambda: (worker.health() or {}).get("pid") not in (None, first_worker_pid))
    assert not alive(first_worker_pid)  # type: ignore[arg-type]  # nothing of it is left

    second = worker.children()  # the consumer's process now is the restarted one
    os.kill(second["consumer"], signal.SIGKILL)
    assert wait_for(lambda: worker.children()["consumer"] != second["consumer"])
    assert alive(worker.children()["consumer"])
    assert worker.pid() == supervisor
    assert len(processes_of(worker.data_dir)) == 2

    restarted = worker.cmem("restart")
    assert restarted.returncode == 0, restarted.stderr
    assert "restarted" in restarted.stdout
    assert worker.pid() != supervisor and not alive(supervisor) and worker.health() is not None

    supervisor = worker.pid()
    children = worker.children()
    os.kill(supervisor, signal.SIGKILL)
    assert wait_for(lambda: not any(alive(pid) for pid in children.values()), timeout=15)
    status = worker.cmem("status")
    assert status.returncode == 3 and "stale" in status.stdout

    recovered = worker.cmem("start")
    assert recovered.returncode == 0, recovered.stderr
    assert "stale pid file replaced" in recovered.stdout
    assert worker.pid() != supervisor and worker.health() is not None
