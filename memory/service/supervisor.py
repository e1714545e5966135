"""The worker process tree: a supervisor that runs gunicorn (the web app and hook API) and
the huey consumer side by side, restarts either if it dies, and stops both together.

Files in the data dir:
- `worker.lock`: flock-ed by the supervisor for its whole life. The kernel drops the lock when
  the process dies (even on kill -9), so "lock free" is the ground truth for "not running";
  the pid file alone cannot say that (claude-mem #1231: start trusted a stale pid file).
- `worker.pid`: the supervisor's pid (written after the lock is taken, removed last). Its
  mtime is the start time `cmem status` reports uptime from.
- `worker.children`: `{"server": pid, "consumer": pid}`, so `cmem stop` can take the whole
  tree down even when the supervisor itself was killed.
- `worker.port`: `host port`, written once the server answers, read by the hook client.
- `logs/worker.out`: stdout/stderr of a detached supervisor; `logs/server.log`: gunicorn.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from memory import config

log = logging.getLogger(__name__)

RESTART_BACKOFF_MAX = 30.0
# A child that stayed up this long is healthy again: its next crash restarts it at once.
RESTART_BACKOFF_RESET_AFTER = 30.0
LOG_ROTATE_BYTES = 5 * 1024 * 1024
LOG_GENERATIONS = 3
LOG_CHECK_EVERY = 60.0


class WorkerError(RuntimeError):
    """A lifecycle step that cannot be done; the message says why and what to do."""


@dataclass(frozen=True)
class Address:
    host: str
    port: int

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


def worker_address() -> Address:
    settings = config.load()
    return Address(
        config.get("CLAUDE_MEM_WORKER_HOST", settings),
        config.get_int("CLAUDE_MEM_WORKER_PORT", settings),
    )


def pid_path() -> Path:
    return config.data_dir() / "worker.pid"


def port_path() -> Path:
    return config.data_dir() / "worker.port"


def lock_path() -> Path:
    return config.data_dir() / "worker.lock"


def start_lock_path() -> Path:
    return config.data_dir() / "worker.start.lock"


def children_path() -> Path:
    return config.data_dir() / "worker.children"


def log_dir() -> Path:
    return config.data_dir() / "logs"


def out_path() -> Path:
    return log_dir() / "worker.out"


def health(address: Address, timeout: float = 1.0) -> dict[str, object] | None:
    """The worker's /api/health answer, or None when nothing (or not cmem) answers."""
    try:
        with urllib.request.urlopen(f"{address.url}/api/health", timeout=timeout) as resp:
            data = json.loads(resp.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None
    if isinstance(data, dict) and data.get("service") == "cmem":
        return data
    return None


def stats(address: Address, timeout: float = 2.0) -> dict[str, object] | None:
    try:
        with urllib.request.urlopen(f"{address.url}/api/stats", timeout=timeout) as resp:
            data = json.loads(resp.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None
    return data if isinstance(data, dict) else None


def port_is_free(address: Address) -> bool:
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address.host, address.port))
        except OSError:
            return False
    return True


def read_pid() -> int | None:
    try:
        return int(pid_path().read_text().split()[0])
    except (FileNotFoundError, ValueError, IndexError):
        return None


def read_port_file() -> Address | None:
    try:
        host, port = port_path().read_text().split()[:2]
        return Address(host, int(port))
    except (FileNotFoundError, ValueError):
        return None


def read_children() -> dict[str, int]:
    try:
        data = json.loads(children_path().read_text())
    except (FileNotFoundError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, int) and v > 0}


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours still answers kill(0); reap it if it is ours.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return False
    except ChildProcessError:
        pass
    # Someone else's zombie (not yet reaped by init) is dead all the same.
    return _proc_state(pid) not in {"Z", "X", None}


def _proc_state(pid: int) -> str | None:
    """The one-letter state from /proc (`?` where there is no /proc, None if gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return "?" if not Path("/proc/self").exists() else None
    except OSError:
        return "?"
    return stat.rsplit(")", 1)[1].split()[0]


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) pids of a process group; children run in their own group."""
    proc = Path("/proc")
    if not (proc / "self").exists():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        except PermissionError:
            pass
        return [pgid]
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # fields: state, ppid, pgrp, ...
        if fields[0] not in {"Z", "X"} and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def group_alive(pgid: int) -> bool:
    return bool(group_members(pgid))


def process_cmdline(pid: int) -> list[str] | None:
    """The process's argv, or None when it does not exist (Linux /proc, else `ps`)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        return [part.decode(errors="replace") for part in raw.split(b"\0") if part]
    except FileNotFoundError:
        if Path("/proc/self").exists():
            return None
    except OSError:
        return None
    try:
        out = subprocess.run(
            ["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.split() or None


def looks_like_cmem(cmdline: list[str] | None, *, supervisor: bool = False) -> bool:
    """Whether argv is one of ours: `cmem serve`, gunicorn on cmem_site.wsgi, run_huey."""
    if not cmdline:
        return False
    ours = any("cmem_site" in arg or Path(arg).name in {"cmem", "manage.py"} for arg in cmdline)
    return ours and (not supervisor or "serve" in cmdline)


def belongs_here(pid: int) -> bool:
    """Whether `pid` is a cmem process of this data dir. Children get CLAUDE_MEM_DATA_DIR in
    their environment, so a recycled pid that is another user's or another data dir's
    cmem is never taken for ours (where /proc is missing, the command line has to do)."""
    if not looks_like_cmem(process_cmdline(pid)):
        return False
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except FileNotFoundError:
        return not Path("/proc/self").exists()
    except OSError:
        return False
    here = {str(config.data_dir()), str(config.data_dir().resolve())}
    return any(f"CLAUDE_MEM_DATA_DIR={path}".encode() in environ for path in here)


def remove_state_files() -> None:
    for path in (port_path(), children_path(), pid_path()):
        path.unlink(missing_ok=True)


def supervisor_lock_held() -> bool:
    path = lock_path()
    if not path.exists():
        return False
    with open(path, "a+b") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    return False


def wait_until(predicate: Any, timeout: float, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def rotate_log(path: Path, keep: int = LOG_GENERATIONS) -> bool:
    """Shift `path` to `path.1` (… up to `keep` generations) once it passes LOG_ROTATE_BYTES."""
    try:
        if path.stat().st_size <= LOG_ROTATE_BYTES:
            return False
    except FileNotFoundError:
        return False
    for n in range(keep - 1, 0, -1):
        older = path.with_name(f"{path.name}.{n}")
        if older.exists():
            os.replace(older, path.with_name(f"{path.name}.{n + 1}"))
    os.replace(path, path.with_name(f"{path.name}.1"))
    return True


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


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
