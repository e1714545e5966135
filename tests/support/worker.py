"""A real `cmem serve` for tests: free ports, a clean worker environment, start and stop."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.paths import CMEM


def owner_headers(data_dir: Path) -> dict[str, str]:
    """What the owner's TCP client sends: the bearer secret from `<data dir>/worker.secret`."""
    return {"Authorization": f"Bearer {(data_dir / 'worker.secret').read_text().strip()}"}


def owner_open(data_dir: Path, url: str, timeout: float = 10) -> bytes:
    """GET `url` from a real worker as its owner (bearer secret over TCP)."""
    request = urllib.request.Request(url, headers=owner_headers(data_dir))
    with urllib.request.urlopen(request, timeout=timeout) as resp:
        return bytes(resp.read())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LiveWorker:
    """A real `cmem serve` (supervisor + one serving process) on a free port, own data dir."""

    data_dir: Path
    port: int
    env: dict[str, str] = field(default_factory=dict)
    proc: subprocess.Popen[bytes] | None = None
    serve_args: tuple[str, ...] = ()
    cmem: str = CMEM  # another installation's `cmem` (the worker benchmark compares two)
    poll: float = 0.1  # seconds between health checks while it starts

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        log = open(self.data_dir / "serve.out", "ab")  # noqa: SIM115 - the worker child writes to it until it stops
        self.proc = subprocess.Popen(
            [self.cmem, "serve", *self.serve_args],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/api/health", timeout=0.5) as resp:
                    if (
                        resp.status == 200
                        and (self.data_dir / "worker.port").exists()
                        and (self.data_dir / "worker.sock").exists()
                    ):
                        return
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(self.poll)
        self.stop()  # a worker that came up late would outlive the test that gave up on it
        raise RuntimeError(
            f"worker did not start: {(self.data_dir / 'serve.out').read_text()[-2000:]}"
        )

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def run_hook(
        self, event: str, payload: bytes, platform: str = "claude-code", timeout: float = 10
    ) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [CMEM, "hook", platform, event],
            input=payload,
            env=self.env,
            capture_output=True,
            timeout=timeout,
        )


def stop_detached_worker(env: dict[str, str]) -> None:
    """Stop a worker a hook (or the MCP server) started detached, and make sure nothing of it
    is left: `cmem stop`, then any process still running with that data dir is killed."""
    subprocess.run([CMEM, "stop"], env=env, capture_output=True, timeout=60)
    marker = f"CLAUDE_MEM_DATA_DIR={env['CLAUDE_MEM_DATA_DIR']}".encode()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if marker in (proc / "environ").read_bytes().split(b"\0"):
                os.kill(int(proc.name), signal.SIGKILL)
        except (OSError, ValueError):
            continue


def make_worker_env(data_dir: Path, port: int, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CLAUDE_MEM_", "ANTHROPIC_", "CMEM_"))
    }
    env.update(
        CLAUDE_MEM_DATA_DIR=str(data_dir),
        CLAUDE_MEM_WORKER_PORT=str(port),
        CLAUDE_MEM_WORKER_HOST="127.0.0.1",
    )
    env.update(extra)
    return env


@contextmanager
def token_mode_worker(data_dir: Path) -> Iterator[tuple[LiveWorker, str]]:
    """A worker in token mode (a team's shared server) and a token for its user alice."""
    data_dir.mkdir(mode=0o700)
    port = free_port()
    env = make_worker_env(data_dir, port, CLAUDE_MEM_REQUIRE_TOKEN="true")
    live = LiveWorker(data_dir=data_dir, port=port, env=env)
    live.start()
    try:
        create_user = (
            "from django.contrib.auth.models import User; User.objects.create_user('alice')"
        )
        subprocess.run(
            [CMEM, "manage", "shell", "-c", create_user],
            env=env,
            check=True,
            capture_output=True,
            timeout=60,
        )
        made = subprocess.run(
            [CMEM, "token", "create", "alice"],
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        )
        yield live, made.stdout.strip().splitlines()[-1]
    finally:
        live.stop()
