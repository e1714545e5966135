"""The worker process tree: a supervisor without Django that runs one serving process (the
web app, the hook API and the huey consumer's threads: memory/worker/server.py), restarts
it if it dies, and stops it with itself.

The state files it writes are described in memory/worker/state.py.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any, Protocol

from memory import config
from memory.runtime import locks
from memory.runtime.credentials import ensure_secret, owner_login_url, socket_path
from memory.runtime.detach import detached, die_with_parent
from memory.runtime.processes import KILL, TERM, signal_group
from memory.worker.state import (
    Address,
    WorkerError,
    children_path,
    lock_path,
    log_dir,
    pid_path,
    port_path,
    read_pid,
    remove_state_files,
    rotate_log,
    worker_address,
)

log = logging.getLogger(__name__)

RESTART_BACKOFF_MAX = 30.0
# A child that stayed up this long is healthy again: its next crash restarts it at once.
RESTART_BACKOFF_RESET_AFTER = 30.0
LOG_CHECK_EVERY = 60.0
# How often the supervisor looks whether CLAUDE_MEM_WATCH turned `cmem watch` on.
WATCH_CHECK_EVERY = 3.0
READY_POLL_S = 0.02
# Liveness: a serving process that is alive but answers neither listener (a listener thread
# gone, a deadlock, a stopped process) would otherwise hold its sockets for ever while every
# hook spools. Probed this often, each probe waiting this long; after this many misses in a
# row (~40 s by default: no hook request or burst of them takes that long) it is killed and
# restarted like a crash. CMEM_LIVENESS_EVERY_S shortens it for the fault tests.
LIVENESS_EVERY_S = 10.0
LIVENESS_TIMEOUT_S = 3.0
LIVENESS_MISSES = 3


def _server_command() -> list[str]:
    # One process serves HTTP and runs the consumer's threads (memory/worker/server.py):
    # the old gunicorn master, gunicorn worker and consumer process each held their own
    # Python and Django (4 processes, 228 MB).
    return [sys.executable, "-m", "cmem_site.cli", "serve-process"]


def _watch_command() -> list[str]:
    # `cmem watch` (memory/watch/loop.py): follows the session files of the agents without
    # hooks that CLAUDE_MEM_WATCH names; a client of the server like a hook, without Django.
    return [sys.executable, "-m", "cmem_site.cli", "watch"]


def _watched() -> bool:
    return bool(config.get("CLAUDE_MEM_WATCH").strip())


# The parts of the worker and the process that runs each; `worker.children` lists them so
# `cmem stop`, doctor and the fault tests can find the process of each part.
PARTS = ("server", "consumer")


def _answers(address: Address | str, timeout: float = 0.5) -> bool:
    """Whether cmem answers GET /api/health at `address` (TCP, or the path of the owner's
    Unix socket): one request on a plain socket, so the supervisor needs neither
    http.client nor urllib (they bring ssl and email: ~10 MB)."""
    target: str | tuple[str, int]
    if isinstance(address, str):
        family, target = socket.AF_UNIX, address
    else:
        family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
        target = (address.host, address.port)
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(target)
            sock.sendall(
                b"GET /api/health HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            )
            reply = b""
            while len(reply) < 65536:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                reply += chunk
    except OSError:
        return False
    head, _, body = reply.partition(b"\r\n\r\n")
    if not head.startswith((b"HTTP/1.1 200", b"HTTP/1.0 200")):
        return False
    try:
        data = json.loads(body)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("service") == "cmem"


# Set by `cmem serve --ensure-admin` (what `make run` runs): the first announce then says
# what to do next, since the person who typed `make run` has no agent connected yet.
NEXT_STEPS_ENV = "CMEM_SERVE_NEXT_STEPS"


def next_steps() -> str:
    """The lines after `make run`'s login link, naming this install's `cmem` by its path
    when the `cmem` on PATH is another one (or none: a checkout's venv is not on PATH)."""
    here = Path(sys.executable).with_name("cmem")
    on_path = shutil.which("cmem")
    cmem = "cmem" if on_path and Path(on_path).resolve() == here.resolve() else str(here)
    lines = [
        "Next steps:",
        f"  {cmem} setup    connect your agents (hooks + MCP server for each one found)",
        f"  {cmem} demo     a demo history to look around in",
        f"  {cmem} doctor   what is wrong, and how to fix it",
    ]
    if cmem != "cmem":
        lines.append(
            "  `cmem` is not on PATH: use the path above, or install it as a command of its own "
            "with `uv tool install '.[embeddings]'` (docs/guide/install.md)"
        )
    return "\n".join(lines)


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
        self.restarts: dict[str, int] = {"server": 0, "watch": 0}
        self.stopping = False
        self.announced = False
        self._lock_file: IO[bytes] | None = None
        self._misses = 0
        self._next_liveness = 0.0

    def _take_lock(self) -> None:
        config.ensure_data_dir()
        fh = locks.hold(lock_path())  # held open for the supervisor's life
        if fh is None:
            raise WorkerError(
                f"another cmem worker (pid {read_pid()}) already runs for {config.data_dir()}; "
                "see `cmem status`"
            ) from None
        self._lock_file = fh

    def _spawn(self, name: str) -> None:
        cmd = _watch_command() if name == "watch" else _server_command()
        env = dict(
            os.environ,
            DJANGO_SETTINGS_MODULE="cmem_site.settings",
            CMEM_WORKER_ROLE=name,
            CLAUDE_MEM_DATA_DIR=str(config.data_dir()),  # also marks the process as ours
        )
        # glibc gives each thread that allocates its own malloc arena (up to 8 per core);
        # the serving process has a dozen threads, and every arena keeps freed memory
        # resident. Two arenas were ~15 MB less after a workload than the default; one is
        # 4 MB less again (the threads take the GIL to allocate anyway).
        env.setdefault("MALLOC_ARENA_MAX", "1")
        # numpy's OpenBLAS starts a thread per core, each with its own buffers, at import;
        # the one matrix product cmem runs (a 10k x 256 scan, memory/retrieval/embeddings/
        # index.py) takes well under a millisecond on one thread.
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        env.setdefault("OMP_NUM_THREADS", "1")
        # Own process group per child, so stop can take its whole subtree. Linux: the child
        # gets SIGTERM when the supervisor dies, even by kill -9, so a killed supervisor
        # never leaves an orphaned server holding the port (memory/runtime/detach.py).
        self.children[name] = subprocess.Popen(
            cmd,
            env=env,
            preexec_fn=die_with_parent(),
            stdin=subprocess.DEVNULL,
            **detached(),
        )
        self.spawned_at[name] = time.monotonic()
        self._write_children()
        log.info("started %s pid %s", name, self.children[name].pid)

    def _write_children(self) -> None:
        server = self.children["server"]
        body = json.dumps(dict.fromkeys(PARTS, server.pid))
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
        if hasattr(signal, "SIGHUP"):  # POSIX: the terminal that started it went away
            signal.signal(signal.SIGHUP, self._handle_signal)
        config.write_atomic(pid_path(), f"{os.getpid()}\n".encode())
        try:
            ensure_secret()  # before the server answers anyone on TCP
            self._rotate_logs()
            self._spawn("server")
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
            if _answers(self.address):
                return True
            server = self.children.get("server")
            if server and server.poll() is not None:
                return False
            # A probe is one loopback connection; a 0.1 s step was up to a tenth of the
            # cold start (~0.7 s) spent before worker.port announced the server.
            time.sleep(READY_POLL_S)
        return False

    def _watch(self) -> None:
        backoff = {"server": 0.5, "watch": 0.5}
        next_rotation = time.monotonic() + LOG_CHECK_EVERY
        next_probe = time.monotonic()
        next_watch_check = time.monotonic()
        while not self.stopping:
            time.sleep(0.2)
            # `cmem install --continue` turns watching on while the worker runs: the watcher
            # starts within seconds (it stops following by itself when turned off).
            if self.announced and time.monotonic() > next_watch_check:
                next_watch_check = time.monotonic() + WATCH_CHECK_EVERY
                if "watch" not in self.children and _watched():
                    self._spawn("watch")
            if time.monotonic() > next_rotation:
                self._rotate_logs()
                next_rotation = time.monotonic() + LOG_CHECK_EVERY
            # A server slower than _wait_ready (a loaded machine) is announced when it answers.
            if not self.announced and time.monotonic() > next_probe:
                if _answers(self.address):
                    self._announce()
                next_probe = time.monotonic() + 1.0
            self._check_liveness()
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
                # Anything the dead process started goes with it before the new one binds.
                signal_group(proc.pid, KILL)
                self._sleep(backoff[name])
                if self.stopping:
                    break
                backoff[name] = min(backoff[name] * 2, RESTART_BACKOFF_MAX)
                self.restarts[name] += 1
                self._spawn(name)
                if name == "server" and self._wait_ready():
                    self._announce()

    def _check_liveness(self) -> None:
        """Kill a serving process that has stopped answering on either listener (see
        LIVENESS_EVERY_S); the loop in _watch then restarts it as after a crash."""
        every = float(os.environ.get("CMEM_LIVENESS_EVERY_S") or LIVENESS_EVERY_S)
        server = self.children.get("server")
        now = time.monotonic()
        if not self.announced or server is None or server.poll() is not None:
            self._misses, self._next_liveness = 0, now + every
            return
        if now < self._next_liveness:
            return
        timeout = min(LIVENESS_TIMEOUT_S, every)
        alive = _answers(self.address, timeout) and _answers(str(socket_path()), timeout)
        self._misses = 0 if alive else self._misses + 1
        self._next_liveness = time.monotonic() + every
        if self._misses >= LIVENESS_MISSES:
            log.warning(
                "server pid %s answered no health probe %d times in a row; killing it to restart",
                server.pid, self._misses,
            )  # fmt: skip
            self._say(f"cmem: server (pid {server.pid}) stopped answering; restarting it")
            signal_group(server.pid, KILL)
            server.wait()
            self._misses = 0

    def _announce(self) -> None:
        """The server answers: publish the address for hook clients (once more after a restart)."""
        config.write_atomic(port_path(), f"{self.address.host} {self.address.port}\n".encode())
        if not self.announced:
            login = owner_login_url(self.address.url)
            self._say(
                f"cmem is running: dashboard {login} (one-time login link; `cmem open` makes "
                f"another) (supervisor pid {os.getpid()})"
            )
            if os.environ.pop(NEXT_STEPS_ENV, "") == "1":
                self._say(next_steps())
        self.announced = True

    def _rotate_logs(self) -> None:
        """Rotate the log every process appends to; Django's handler reopens by itself."""
        rotate_log(log_dir() / "cmem.log")

    def _sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.stopping:
            time.sleep(0.05)

    def _stop_children(self, timeout: float = 10.0) -> None:
        for proc in self.children.values():
            signal_group(proc.pid, TERM)
        deadline = time.monotonic() + timeout
        for proc in self.children.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                signal_group(proc.pid, KILL)
                proc.wait()
            # Anything left in the child's group goes too.
            signal_group(proc.pid, KILL)


def _configure_logging() -> None:
    """The same file and format as Django's LOGGING (cmem_site/settings.py), without Django."""
    raw = config.get("CLAUDE_MEM_LOG_LEVEL").upper()
    level = {"WARN": "WARNING", "SILENT": "CRITICAL"}.get(raw, raw)
    if level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
        level = "INFO"
    log_dir().mkdir(parents=True, exist_ok=True)
    handler = logging.handlers.WatchedFileHandler(log_dir() / "cmem.log")
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s %(name)s %(process)d: %(message)s")
    )
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)


def main() -> int:
    """`cmem serve` after its migrations: the supervisor alone, in a process without Django."""
    _configure_logging()
    try:
        return Supervisor(worker_address()).run()
    except WorkerError as exc:
        sys.stderr.write(f"CommandError: {exc}\n")
        return 1
