"""The pieces the end-to-end tests put together: the pinned `claude` binary, a scratch HOME
with cmem's hooks installed by `cmem install`, a real `cmem serve`, and read-only SQL on the
worker's database (the worker is another process; the test never writes through it)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import CMEM, REPO, LiveWorker, owner_open
from tests.support.e2e_record import e2e_record

PINNED_VERSION = (Path(__file__).with_name("claude-code-version.txt")).read_text().strip()
NODE_DIR = REPO / ".e2e-node" / "node_modules"


def claude_binary() -> Path:
    """The pinned CLI from `.e2e-node/` (installed by `.ci/run`), or CMEM_CLAUDE_BIN.

    CI exports CMEM_E2E_REQUIRED=1 so a missing CLI fails there; elsewhere the tests skip."""
    candidates = [
        Path(os.environ["CMEM_CLAUDE_BIN"]) if os.environ.get("CMEM_CLAUDE_BIN") else None,
        # The native binary itself: works even when npm skipped the wrapper's postinstall.
        NODE_DIR / "@anthropic-ai" / "claude-code-linux-x64" / "claude",
        NODE_DIR / ".bin" / "claude",
    ]
    return installed_cli(
        candidates, name="Claude Code", package=f"@anthropic-ai/claude-code@{PINNED_VERSION}"
    )


def installed_cli(candidates: list[Path | None], *, name: str, package: str) -> Path:
    """The first executable candidate; else a failure under CMEM_E2E_REQUIRED (CI), a skip
    elsewhere, both saying how to install `package`."""
    for path in candidates:
        if path and path.exists() and os.access(path, os.X_OK):
            return path
    hint = f"npm install --prefix {REPO / '.e2e-node'} {package}"
    if os.environ.get("CMEM_E2E_REQUIRED"):
        pytest.fail(f"the {name} CLI is not installed: {hint}")
    pytest.skip(f"the {name} CLI is not installed: {hint}")


@dataclass
class ClaudeRun:
    returncode: int
    result: dict[str, Any]
    stderr: str

    @property
    def session_id(self) -> str:
        return str(self.result.get("session_id", ""))


@dataclass
class Claude:
    binary: Path
    home: Path
    project: Path
    settings: Path
    env: dict[str, str]

    def run(self, prompt: str, *, resume: str = "", timeout: float = 60) -> ClaudeRun:
        args = [
            str(self.binary),
            "-p",
            prompt,
            "--output-format",
            "json",
            "--settings",
            str(self.settings),
        ]
        # Root needs IS_SANDBOX=1 for this; it keeps Edit/Write/Bash from prompting headless.
        args += ["--dangerously-skip-permissions"]
        if resume:
            args += ["--resume", resume]
        proc = subprocess.run(
            args, cwd=self.project, env=self.env, capture_output=True, timeout=timeout
        )
        out = proc.stdout.decode(errors="replace").strip()
        try:
            result = json.loads(out.splitlines()[-1]) if out else {}
        except ValueError:
            result = {"raw": out}
        return ClaudeRun(proc.returncode, result, proc.stderr.decode(errors="replace"))


def claude_env(*, home: Path, api_url: str, worker: LiveWorker) -> dict[str, str]:
    """A clean environment: nothing of the developer's HOME, API keys or cmem settings leaks in."""
    path = os.pathsep.join([str(Path(CMEM).parent), "/usr/local/bin", "/usr/bin", "/bin"])
    return {
        "PATH": path,
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "ANTHROPIC_BASE_URL": api_url,
        "ANTHROPIC_API_KEY": "sk-ant-e2e-fake",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "IS_SANDBOX": "1",
        # The hooks Claude Code runs inherit these and find the test's worker with them.
        "CLAUDE_MEM_DATA_DIR": str(worker.data_dir),
        "CLAUDE_MEM_WORKER_HOST": "127.0.0.1",
        "CLAUDE_MEM_WORKER_PORT": str(worker.port),
    }


def cmem_install(*, settings: Path, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [CMEM, "install", "--settings-file", str(settings)],
        env=env,
        capture_output=True,
        timeout=60,
    )


def query(worker: LiveWorker, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
    db = sqlite3.connect(f"file:{worker.data_dir / 'cmem.sqlite3'}?mode=ro", uri=True, timeout=10)
    db.row_factory = sqlite3.Row
    try:
        return db.execute(sql, params).fetchall()
    finally:
        db.close()


def get_json(worker: LiveWorker, path: str) -> dict[str, Any]:
    return json.loads(owner_open(worker.data_dir, worker.url + path, timeout=5))


def wait_for(check: Any, *, timeout: float = 45) -> Any:
    """`check()`'s first truthy answer within `timeout` seconds, else its last answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    return check()


def wait_until_compressed(worker: LiveWorker, *, timeout: float = 45) -> dict[str, Any]:
    """Poll /api/stats until nothing captured is waiting for compression."""
    deadline = time.monotonic() + timeout
    stats: dict[str, Any] = {}
    while time.monotonic() < deadline:
        stats = get_json(worker, "/api/stats")
        if stats.get("pending") == 0 and stats.get("observations", 0) > 0:
            return stats
        time.sleep(0.3)
    return stats


def close_world(*, worker: LiveWorker, api: Any, root: Path, data: Path, name: str) -> None:
    """A Claude Code e2e's teardown: stop the worker and the fake model server, keep what
    Claude Code sent (`requests.json`, for post-mortems) and record the run as `name`."""
    worker.stop()
    api.stop()
    (root / "requests.json").write_text(json.dumps(api.requests, indent=1))
    e2e_record(
        data_dir=data,
        scratch=root,
        name=f"{name}-{PINNED_VERSION}",
        agent="claude-code",
        version=PINNED_VERSION,
    )
