"""The worker process tree: a supervisor that runs gunicorn (the web app and hook API) and
the huey consumer side by side, restarts either if it dies, and stops both together.

The state files it writes are described in memory/service/worker_state.py.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import logging
import os
import signal
import subprocess
import sys
import time
from typing import IO, Any, Protocol

from memory import config
from memory.service.processes import signal_group
from memory.service.worker_state import (
    Address,
    WorkerError,
    children_path,
    health,
    lock_path,
    log_dir,
    pid_path,
    port_path,
    read_pid,
    remove_state_files,
    rotate_log,
)

log = logging.getLogger(__name__)

RESTART_BACKOFF_MAX = 30.0
# A child that stayed up this long is healthy again: its next crash restarts it at once.
RESTART_BACKOFF_RESET_AFTER = 30.0
LOG_CHECK_EVERY = 60.0


def _server_command(address: Address) -> list[str]:
    # gunicorn: a production WSGI server with a master that restarts its own worker. One
    # worker process with threads keeps one SQLite writer process and shares its connections.
    return [
        sys.executable,
        "-m",
        "gunicorn",
        "cmem_site.wsgi:application",
        "--bind",
        f"{address.host}:{address.port}"
        if ":" not in address.host
        else f"[{address.host}]:{address.port}",
        "--workers",
        "1",
        "--worker-class",
        "gthread",
        "--threads",
        os.environ.get("CMEM_SERVER_THREADS", "8"),
        "--timeout",
        "60",
        "--graceful-timeout",
        "5",
        "--log-level",
        "warning",
        "--error-logfile",
        str(log_dir() / "server.log"),
    ]


def _consumer_command() -> list[str]:
    return [sys.executable, "-m", "cmem_site.cli", "manage", "run_huey", "--quiet"]


def _die_with_parent() -> None:
    """Linux: the child gets SIGTERM when the supervisor dies, even by kill -9, so a killed
    supervisor never leaves an orphaned server holding the port. Best effort elsewhere."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


class Writable(Protocol):
    def write(self, text: str, /) -> Any: ...
    def flush(self) -> Any: ...


class Supervisor:
    """Runs the server and the consumer; restarts a child that dies; stops both on a signal."""

    def __init__(self, address: Address, *, out: Writable | None = None) -> None:
        self.address = address
        self.out: Writable = out or sys.stdout
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.spawned_at: dict[str, float] = {}
        self.restarts: dict[str, int] = {"server": 0, "consumer": 0}
        self.stopping = False
        self.announced = False
        self._lock_file: IO[bytes] | None = None

    def _take_lock(self) -> None:
        config.ensure_data_dir()
        fh = open(lock_path(), "a+b")  # noqa: SIM115 - held open for the supervisor's life
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            raise WorkerError(
                f"another cmem worker (pid {read_pid()}) already runs for {config.data_dir()}; "
                "see `cmem status`"
            ) from None
        self._lock_file = fh

    def _spawn(self, name: str) -> None:
        cmd = _server_command(self.address) if name == "server" else _consumer_command()
        if name == "server":
            rotate_log(log_dir() / "server.log")
        env = dict(
            os.environ,
            DJANGO_SETTINGS_MODULE="cmem_site.settings",
            CMEM_WORKER_ROLE=name,
            CLAUDE_MEM_DATA_DIR=str(config.data_dir()),  # also marks the process as ours
        )
        # Own process group per child so stop can take the whole subtree (gunicorn's worker too).
        self.children[name] = subprocess.Popen(
            cmd,
            env=env,
            start_new_session=True,
            preexec_fn=_die_with_parent,
            stdin=subprocess.DEVNULL,
        )
        self.spawned_at[name] = time.monotonic()
        self._write_children()
        log.info("started %s pid %s", name, self.children[name].pid)

    def _write_children(self) -> None:
        body = json.dumps({name: proc.pid for name, proc in self.children.items()})
        config.write_atomic(children_path(), body.encode())

    def _say(self, line: str) -> None:
        # Ends in a newline itself: Django's OutputWrapper and a plain file both print it once.
        self.out.write(line + "\n")
        self.out.flush()

    def _handle_signal(self, signum: int, frame: object) -> None:
        self.stopping = True

    def run(self) -> int:
        self._take_lock()
        signal.signal(signal.SIGTERM, self._handle_signal)
        signal.signal(signal.SIGINT, self._handle_signal)
        signal.signal(signal.SIGHUP, self._handle_signal)
        config.write_atomic(pid_path(), f"{os.getpid()}\n".encode())
        try:
            self._rotate_logs()
            self._spawn("server")
            self._spawn("consumer")
            if self._wait_ready():
                self._announce()
            self._watch()
        finally:
            self._stop_children()
            if read_pid() == os.getpid():
                remove_state_files()
            if self._lock_file:
                self._lock_file.close()
        return 0

    def _wait_ready(self, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.stopping:
            if health(self.address, timeout=0.5):
                return True
            server = self.children.get("server")
            if server and server.poll() is not None:
                return False
            time.sleep(0.1)
        return False

    def _watch(self) -> None:
        backoff = {"server": 0.5, "consumer": 0.5}
        next_rotation = time.monotonic() + LOG_CHECK_EVERY
        next_probe = time.monotonic()
        while not self.stopping:
            time.sleep(0.2)
            if time.monotonic() > next_rotation:
                self._rotate_logs()
                next_rotation = time.monotonic() + LOG_CHECK_EVERY
            # A server slower than _wait_ready (a loaded machine) is announced when it answers.
            if not self.announced and time.monotonic() > next_probe:
                if health(self.address, timeout=0.5):
                    self._announce()
                next_probe = time.monotonic() + 1.0
            for name, proc in list(self.children.items()):
                if self.stopping or proc.poll() is None:
                    continue
                if time.monotonic() - self.spawned_at[name] > RESTART_BACKOFF_RESET_AFTER:
                    backoff[name] = 0.5
                log.warning(
                    "%s exited with %s; restarting in %.1fs", name, proc.returncode, backoff[name]
                )
                self._say(
                    f"cmem: {name} (pid {proc.pid}) exited with {proc.returncode}; restarting"
                )
                # gunicorn's worker outlives a killed master for a moment and keeps the
                # listening socket: clear the old group before the new master binds.
                signal_group(proc.pid, signal.SIGKILL)
                self._sleep(backoff[name])
                if self.stopping:
                    break
                backoff[name] = min(backoff[name] * 2, RESTART_BACKOFF_MAX)
                self.restarts[name] += 1
                self._spawn(name)
                if name == "server" and self._wait_ready():
                    self._announce()

    def _announce(self) -> None:
        """The server answers: publish the address for hook clients (once more after a restart)."""
        config.write_atomic(port_path(), f"{self.address.host} {self.address.port}\n".encode())
        if not self.announced:
            self._say(
                f"cmem is running: dashboard {self.address.url}/ (supervisor pid {os.getpid()})"
            )
        self.announced = True

    def _rotate_logs(self) -> None:
        """Rotate the logs every process appends to; Django's handlers reopen by themselves,
        gunicorn's master reopens its error log on SIGUSR1."""
        rotate_log(log_dir() / "cmem.log")
        server = self.children.get("server")
        if rotate_log(log_dir() / "server.log") and server and server.poll() is None:
            os.kill(server.pid, signal.SIGUSR1)

    def _sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.stopping:
            time.sleep(0.05)

    def _stop_children(self, timeout: float = 10.0) -> None:
        for proc in self.children.values():
            signal_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in self.children.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
            # Anything left in the child's group (gunicorn's worker) goes too.
            signal_group(proc.pid, signal.SIGKILL)
