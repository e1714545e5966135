"""Where the worker is and what it leaves in the data dir: its address, the state files, the
health probe, and log rotation. Read by `cmem start/stop/status`, doctor and the supervisor.

Files in the data dir:
- `worker.lock`: locked by the supervisor for its whole life (memory/runtime/locks.py: flock
  on POSIX, LockFileEx on Windows). The kernel drops the lock when the process dies (even on
  kill -9), so "lock free" is the ground truth for "not running";
  the pid file alone cannot say that (claude-mem #1231: start trusted a stale pid file).
- `worker.pid`: the supervisor's pid (written after the lock is taken, removed last). Its
  mtime is the start time `cmem status` reports uptime from.
- `worker.children`: `{"server": pid, "consumer": pid}`: the process that runs each part
  (one serving process runs both), so `cmem stop` can take the whole tree down even when
  the supervisor itself was killed.
- `worker.port`: `host port`, written once the server answers, read by the hook client.
- `logs/worker.out`: stdout/stderr of a detached supervisor; `logs/cmem.log`: every process.
"""

from __future__ import annotations

import functools
import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory import config
from memory.runtime import locks

LOG_ROTATE_BYTES = 5 * 1024 * 1024
LOG_GENERATIONS = 3


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
    # Imported here: the supervisor imports this module and is kept free of urllib and ssl.
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"{address.url}/api/health", timeout=timeout) as resp:
            data = json.loads(resp.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None
    if isinstance(data, dict) and data.get("service") == "cmem":
        return data
    return None


@functools.cache
def _unix_connection() -> Any:
    # the supervisor imports this module and is kept free of http.client (ssl, email)
    import http.client

    class UnixConnection(http.client.HTTPConnection):
        """HTTP over the worker's Unix socket: only the owner's worker can be listening there."""

        def __init__(self, path: str, timeout: float) -> None:
            super().__init__("localhost", timeout=timeout)
            self._path = path

        def connect(self) -> None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(self.timeout)
            sock.connect(self._path)
            self.sock = sock

    return UnixConnection


def __getattr__(name: str) -> Any:
    # `_UnixConnection` is built on first use: http.client stays out of the supervisor.
    if name == "_UnixConnection":
        return _unix_connection()
    raise AttributeError(name)


def owner_get(path: str, timeout: float = 2.0) -> dict[str, object] | None:
    """GET a JSON object from the local worker over its Unix socket, or None."""
    # the supervisor imports this module and is kept free of http.client (ssl, email)
    import http.client

    conn = _unix_connection()(str(config.data_dir() / "worker.sock"), timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        data = json.loads(resp.read()) if resp.status == 200 else None
    except (OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        conn.close()
    return data if isinstance(data, dict) else None


def stats(address: Address, timeout: float = 2.0) -> dict[str, object] | None:
    # Over the socket, not `address`: a stranger on the port must not see the owner's request.
    return owner_get("/api/stats", timeout)


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


def remove_state_files() -> None:
    for path in (port_path(), children_path(), config.data_dir() / "worker.sock", pid_path()):
        path.unlink(missing_ok=True)


def supervisor_lock_held() -> bool:
    return locks.held_elsewhere(lock_path())


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
