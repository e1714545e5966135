"""The worker process tree: a supervisor that runs gunicorn (the web app and hook API) and
the huey consumer side by side, restarts either if it dies, and stops both together.

Files in the data dir: `worker.pid` (the supervisor's pid, written first, removed last) and
`worker.port` (`host port`, written once the server answers, read by the hook client).
"""

from __future__ import annotations

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

from memory import config

log = logging.getLogger(__name__)

RESTART_BACKOFF_MAX = 30.0


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
    return Address(config.get("CLAUDE_MEM_WORKER_HOST", settings), config.get_int("CLAUDE_MEM_WORKER_PORT", settings))


def pid_path() -> Path:
    return config.data_dir() / "worker.pid"


def port_path() -> Path:
    return config.data_dir() / "worker.port"


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
        return done == 0
    except ChildProcessError:
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
        f"{address.host}:{address.port}" if ":" not in address.host else f"[{address.host}]:{address.port}",
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
        str(config.data_dir() / "logs" / "server.log"),
    ]


def _consumer_command() -> list[str]:
    return [sys.executable, "-m", "cmem_site.cli", "run_huey", "--quiet"]


class Supervisor:
    """Runs the server and the consumer; restarts a child that dies; stops both on a signal."""

    def __init__(self, address: Address, *, out=None) -> None:  # type: ignore[no-untyped-def]
        self.address = address
        self.out = out or sys.stdout
        self.children: dict[str, subprocess.Popen[bytes]] = {}
        self.restarts: dict[str, int] = {"server": 0, "consumer": 0}
        self.stopping = False

    def _spawn(self, name: str) -> None:
        cmd = _server_command(self.address) if name == "server" else _consumer_command()
        env = dict(os.environ, DJANGO_SETTINGS_MODULE="cmem_site.settings", CMEM_WORKER_ROLE=name)
        # Own process group per child so stop can take the whole subtree (gunicorn's worker too).
        self.children[name] = subprocess.Popen(cmd, env=env, start_new_session=True)
        log.info("started %s pid %s", name, self.children[name].pid)

    def _handle_signal(self, signum: int, frame: object) -> None:
        self.stopping = True

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._handle_signal)
        signal.signal(signal.SIGINT, self._handle_signal)
        signal.signal(signal.SIGHUP, self._handle_signal)
        config.write_atomic(pid_path(), f"{os.getpid()}\n".encode())
        try:
            self._spawn("server")
            self._spawn("consumer")
            if self._wait_ready():
                config.write_atomic(port_path(), f"{self.address.host} {self.address.port}\n".encode())
                print(f"cmem is running: dashboard {self.address.url}/", file=self.out, flush=True)
            self._watch()
        finally:
            self._stop_children()
            for path in (port_path(), pid_path()):
                if path.exists() and (path != pid_path() or read_pid() == os.getpid()):
                    path.unlink(missing_ok=True)
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
        while not self.stopping:
            time.sleep(0.2)
            for name, proc in list(self.children.items()):
                if self.stopping or proc.poll() is None:
                    continue
                log.warning("%s exited with %s; restarting in %.1fs", name, proc.returncode, backoff[name])
                self._sleep(backoff[name])
                if self.stopping:
                    break
                backoff[name] = min(backoff[name] * 2, RESTART_BACKOFF_MAX)
                self.restarts[name] += 1
                self._spawn(name)
                if name == "server" and self._wait_ready():
                    config.write_atomic(port_path(), f"{self.address.host} {self.address.port}\n".encode())
                    backoff[name] = 0.5

    def _sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.stopping:
            time.sleep(0.05)

    def _stop_children(self, timeout: float = 10.0) -> None:
        for proc in self.children.values():
            _signal_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in self.children.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
            # Anything left in the child's group (gunicorn's worker) goes too.
            _signal_group(proc.pid, signal.SIGKILL)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
