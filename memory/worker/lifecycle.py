"""Controlling the worker from outside: `cmem start | stop | restart | status`.

Everything here runs in the short-lived CLI process; memory/worker/supervisor.py is what runs inside
the detached supervisor. A worker is "running" only when its pid file names a live
`cmem serve` that holds the worker lock, so a stale pid file is never trusted.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from memory import config
from memory.runtime import locks
from memory.runtime.detach import detached
from memory.runtime.processes import (
    KILL,
    TERM,
    belongs_here,
    group_alive,
    looks_like_cmem,
    pid_alive,
    process_cmdline,
    signal_group,
    signal_process,
    wait_until,
)
from memory.worker.state import (
    Address,
    WorkerError,
    health,
    log_dir,
    out_path,
    pid_path,
    port_is_free,
    port_path,
    read_children,
    read_pid,
    read_port_file,
    remove_state_files,
    rotate_log,
    start_lock_path,
    supervisor_lock_held,
    worker_address,
)


@dataclass
class WorkerState:
    """What the data dir says about the worker, checked against the live processes."""

    pid: int | None  # the supervisor's pid when running
    address: Address
    running: bool
    stale_reason: str = ""  # set when a pid file exists but names no live cmem supervisor
    started: float | None = None  # epoch seconds
    health: dict[str, object] | None = None
    children: dict[str, int] = field(default_factory=dict)

    @property
    def uptime(self) -> float | None:
        return None if self.started is None else max(0.0, time.time() - self.started)


def worker_state(*, with_health: bool = True) -> WorkerState:
    """Read the pid file and tell a running supervisor from a stale file.

    1. No pid file: not running.
    2. A pid that is dead, or alive but not a `cmem serve` (the pid was reused), or a free
       lock: stale, with the reason.
    3. Otherwise running; the address comes from worker.port (what it really bound).
    """
    address = read_port_file() or worker_address()
    pid = read_pid()
    if pid is None:
        return WorkerState(pid=None, address=address, running=False)
    cmdline = process_cmdline(pid) if pid_alive(pid) else None
    if cmdline is None:
        reason = f"pid file names pid {pid}, which is not running"
    elif not looks_like_cmem(cmdline, supervisor=True):
        reason = f"pid file names pid {pid}, which is `{' '.join(cmdline)[:80]}`, not cmem"
    elif not supervisor_lock_held():
        reason = f"pid {pid} is a cmem process but holds no worker lock for {config.data_dir()}"
    else:
        try:
            started = pid_path().stat().st_mtime
        except FileNotFoundError:
            started = None
        return WorkerState(
            pid=pid,
            address=address,
            running=True,
            started=started,
            health=health(address) if with_health else None,
            children=read_children(),
        )
    return WorkerState(
        pid=None, address=address, running=False, stale_reason=reason, children=read_children()
    )


def _kill_leftover_children(children: dict[str, int]) -> list[int]:
    """SIGKILL the process groups of recorded children that are still cmem; return their pids."""
    killed = []
    for pid in children.values():
        # A dead leader with a live group is gunicorn's orphaned worker: the group id
        # cannot be reused while the group exists, so it is still ours.
        if group_alive(pid) and (belongs_here(pid) or not pid_alive(pid)):
            signal_group(pid, KILL)
            killed.append(pid)
    for pid in killed:
        wait_until(lambda p=pid: not group_alive(p), 5.0)
    return killed


def stale_cleanup(state: WorkerState) -> list[int]:
    """Forget a stale pid file, stopping what is left of that worker's tree first."""
    killed = _kill_leftover_children(state.children)
    remove_state_files()
    return killed


@contextlib.contextmanager
def _start_lock(timeout: float) -> Iterator[None]:
    """One launcher at a time: hooks of parallel sessions may all try to start the worker."""
    config.ensure_data_dir()
    with locks.exclusive(start_lock_path(), timeout=timeout, mode="a+b") as held:
        if held is None:
            raise WorkerError("another `cmem start` is still running; try again")
        yield


@dataclass
class StartResult:
    state: WorkerState
    already_running: bool
    notes: list[str] = field(default_factory=list)


def worker_start(*, timeout: float = 60.0) -> StartResult:
    """Start the supervisor detached and wait until /api/health answers.

    1. Under the start lock, look at the pid file: a running worker is reported, not doubled.
    2. A stale pid file is reported and replaced (leftover children of it are stopped).
    3. A port held by anything else is refused with a message naming the port.
    4. Spawn `cmem serve` in a new session, output to logs/worker.out; wait for health.
    """
    notes: list[str] = []
    with _start_lock(timeout):
        state = worker_state()
        if state.running:
            if not state.health:
                state = _wait_healthy(state, timeout)
            return StartResult(state=state, already_running=True)
        if state.stale_reason:
            killed = stale_cleanup(state)
            notes.append(f"stale pid file replaced: {state.stale_reason}")
            if killed:
                notes.append(
                    f"stopped leftover processes of that worker: {', '.join(map(str, killed))}"
                )
        address = worker_address()
        _check_port(address)
        proc = _spawn_detached()
        try:
            state = _wait_started(proc, timeout)
        except WorkerError:
            _terminate(proc)
            raise
        return StartResult(state=state, already_running=False, notes=notes)


def _check_port(address: Address) -> None:
    other = health(address, timeout=1.0)
    if other:
        raise WorkerError(
            f"port {address.port} on {address.host} is served by another cmem worker (pid {other.get('pid')}) "
            f"that {config.data_dir()} does not know about: stop it, or set CLAUDE_MEM_WORKER_PORT."
        )
    if not port_is_free(address):
        raise WorkerError(
            f"port {address.port} on {address.host} is held by another program, not cmem. "
            "Stop it, or choose another port with CLAUDE_MEM_WORKER_PORT."
        )


def _spawn_detached() -> subprocess.Popen[bytes]:
    log_dir().mkdir(mode=0o700, parents=True, exist_ok=True)
    rotate_log(out_path())
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="cmem_site.settings",
        PYTHONUNBUFFERED="1",
        # Absolute: the supervisor runs in the data dir, where a relative path means nothing.
        CLAUDE_MEM_DATA_DIR=str(config.data_dir().resolve()),
    )
    with open(out_path(), "ab") as out:
        os.chmod(out_path(), 0o600)
        # A new session: the worker outlives the terminal or hook that started it, and no
        # Ctrl-C or SIGHUP aimed at that terminal reaches it.
        return subprocess.Popen(
            [sys.executable, "-m", "cmem_site.cli", "serve"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(config.data_dir().resolve()),
            **detached(),
        )


def _wait_started(proc: subprocess.Popen[bytes], timeout: float) -> WorkerState:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise WorkerError(
                f"the worker exited with status {proc.returncode}:\n{_tail(out_path(), 15)}"
            )
        if read_pid() == proc.pid and port_path().exists():
            state = worker_state()
            if state.running and state.health:
                return state
        time.sleep(0.02)  # two stat calls a step: `cmem start` returns when the worker answers
    raise WorkerError(f"the worker did not answer within {timeout:.0f}s:\n{_tail(out_path(), 15)}")


def _wait_healthy(state: WorkerState, timeout: float) -> WorkerState:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = worker_state()
        if not state.running or state.health:
            return state
        time.sleep(0.2)
    return state


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            signal_group(proc.pid, KILL)
            proc.wait()


@dataclass
class StopResult:
    was_running: bool
    pid: int | None = None
    forced: bool = False
    notes: list[str] = field(default_factory=list)


def worker_stop(*, timeout: float = 20.0) -> StopResult:
    """Stop the supervisor and verify that nothing of it is left.

    1. SIGTERM the supervisor (it stops its children, waiting up to 10s for them).
    2. After `timeout`, SIGKILL it; then SIGKILL every recorded child's process group.
    3. Check that the supervisor and every child group are gone and the port is free.
    """
    state = worker_state(with_health=False)
    if not state.running:
        result = StopResult(was_running=False)
        if state.stale_reason:
            killed = stale_cleanup(state)
            result.notes.append(f"removed a stale pid file: {state.stale_reason}")
            if killed:
                result.notes.append(f"stopped leftover processes: {', '.join(map(str, killed))}")
        return result
    assert state.pid is not None
    pid, children, address = state.pid, state.children, state.address
    result = StopResult(was_running=True, pid=pid)
    signal_process(pid, TERM)
    if not wait_until(lambda: not pid_alive(pid), timeout):
        result.forced = True
        result.notes.append(f"the supervisor did not stop within {timeout:.0f}s; killed it")
        signal_process(pid, KILL)
        wait_until(lambda: not pid_alive(pid), 5.0)
    killed = _kill_leftover_children(children)
    if killed:
        result.forced = True
        result.notes.append(f"killed leftover processes: {', '.join(map(str, killed))}")
    if not wait_until(lambda: port_is_free(address), 10.0):
        raise WorkerError(
            f"the worker stopped but port {address.port} on {address.host} is still in use"
        )
    left = [
        p
        for p in (pid, *children.values())
        if (p == pid and pid_alive(p)) or (p != pid and group_alive(p))
    ]
    if left:
        raise WorkerError(f"processes still running after stop: {', '.join(map(str, left))}")
    if read_pid() == pid:
        remove_state_files()
    return result


def _tail(path: Path, lines: int) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(no output)"


def log_files() -> list[Path]:
    folder = log_dir()
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in {".log", ".out"})
