"""Shared by the fault tests: a real `cmem serve` with extra settings, hook payloads shaped
like Claude Code 2.1.332's, direct SQLite reads of the worker's database, and waiting."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fakes.anthropic import Reply
from tests.support import CLAUDE_FIXTURES, CMEM, LiveWorker, free_port, make_worker_env

KEY = "sk-ant-api03-RELIABILITY-abcdefghijklmnop"
_BASH = json.loads((CLAUDE_FIXTURES / "PostToolUse.bash.json").read_text())
_FAILURE = json.loads((CLAUDE_FIXTURES / "PostToolUseFailure.json").read_text())
_PROMPT = json.loads((CLAUDE_FIXTURES / "UserPromptSubmit.json").read_text())
_STOP = json.loads((CLAUDE_FIXTURES / "Stop.json").read_text())
_END = json.loads((CLAUDE_FIXTURES / "SessionEnd.json").read_text())
_START = json.loads((CLAUDE_FIXTURES / "SessionStart.json").read_text())


def new_worker(tmp_path: Path, name: str = "worker", **settings: str) -> LiveWorker:
    data = tmp_path / name
    data.mkdir(mode=0o700, exist_ok=True)
    port = free_port()
    return LiveWorker(data_dir=data, port=port, env=make_worker_env(data, port, **settings))


def api_settings(url: str, **extra: str) -> dict[str, str]:
    return {
        "CLAUDE_MEM_ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": KEY,
        "CLAUDE_MEM_COMPRESSOR": "api",
        "CLAUDE_MEM_API_BACKOFF_MS": "10",
        **extra,
    }


# -- payloads ------------------------------------------------------------------------------


class Session:
    """One agent session's payloads, all with the same ids and cwd."""

    def __init__(
        self, cwd: Path, session_id: str = "rel-session", prompt_id: str = "rel-p1"
    ) -> None:
        self.cwd = str(cwd)
        self.session_id = session_id
        self.prompt_id = prompt_id

    def _base(self, template: dict[str, Any]) -> dict[str, Any]:
        body = copy.deepcopy(template)
        body.update(session_id=self.session_id, cwd=self.cwd, prompt_id=self.prompt_id)
        return body

    def prompt(self, text: str, prompt_id: str | None = None) -> bytes:
        if prompt_id:
            self.prompt_id = prompt_id
        return json.dumps({**self._base(_PROMPT), "prompt": text}).encode()

    def bash(self, n: int, *, stdout: str = "", command: str = "") -> bytes:
        body = self._base(_BASH)
        body["tool_input"] = {"command": command or f"echo tool-{n}", "description": f"step {n}"}
        body["tool_response"] = dict(body["tool_response"], stdout=stdout or f"tool-{n} ran")
        body["tool_use_id"] = f"toolu_rel_{n:04d}"
        return json.dumps(body).encode()

    def failure(self, n: int, error: str, command: str = "") -> bytes:
        body = self._base(_FAILURE)
        body["tool_name"] = "Bash"
        body["tool_input"] = {"command": command or f"run tool-{n}", "description": "fails"}
        body["error"] = error
        body["tool_use_id"] = f"toolu_rel_{n:04d}"
        return json.dumps(body).encode()

    def read(self, n: int, path: Path, content: str) -> bytes:
        body = self._base(_BASH)
        lines = content.count("\n") + 1
        body.update(
            tool_name="Read",
            tool_input={"file_path": str(path)},
            tool_response={
                "type": "text",
                "file": {
                    "filePath": str(path),
                    "content": content,
                    "numLines": lines,
                    "startLine": 1,
                    "totalLines": lines,
                },
            },
            tool_use_id=f"toolu_rel_{n:04d}",
        )
        return json.dumps(body).encode()

    def stop(self, message: str = "Done.") -> bytes:
        return json.dumps(
            {**self._base(_STOP), "last_assistant_message": message, "stop_hook_active": False}
        ).encode()

    def end(self) -> bytes:
        return json.dumps(self._base(_END)).encode()

    def start(self) -> bytes:
        return json.dumps(self._base(_START)).encode()


def echo_observations(body: dict[str, Any], *, delay: float = 0.0) -> Reply:
    """The fake model: one observation per tool use in the batch, titled after its marker."""
    message = body["messages"][0]["content"]
    if isinstance(message, list):
        message = " ".join(str(b.get("text", "")) for b in message)
    if "<summary" in message or "PROGRESS SUMMARY" in message:
        return Reply(
            text="<summary><request>the request</request><completed>steps ran</completed></summary>",
            delay=delay,
        )
    blocks = [
        f'<observation uses="{n}"><type>discovery</type><title>obs of {marker}</title>'
        f"<narrative>ran {marker}</narrative></observation>"
        for n, marker in re.findall(r'<tool_use n="(\d+)".*?(tool-\d+)', message, re.S)
    ]
    return Reply(text="\n".join(blocks), delay=delay)


# -- hooks -------------------------------------------------------------------------------------


def hook(
    env: dict[str, str], event: str, payload: bytes, timeout: float = 20
) -> tuple[subprocess.CompletedProcess[bytes], float]:
    """`cmem hook claude-code <event>` with `env`; returns the result and its wall time."""
    started = time.monotonic()
    result = subprocess.run(
        [CMEM, "hook", "claude-code", event],
        input=payload,
        env=env,
        capture_output=True,
        timeout=timeout,
    )
    return result, time.monotonic() - started


# -- the worker's database and processes ---------------------------------------------------------


def rows(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(db, timeout=30)) as conn:
        return conn.execute(sql, params).fetchall()


def scalar(db: Path, sql: str, params: tuple[Any, ...] = ()) -> Any:
    found = rows(db, sql, params)
    return found[0][0] if found else None


def integrity(db: Path) -> str:
    return str(scalar(db, "PRAGMA integrity_check"))


def children(data: Path) -> dict[str, int]:
    return {k: int(v) for k, v in json.loads((data / "worker.children").read_text()).items()}


def kill9_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(sqlite3.OperationalError, OSError, ValueError):
            value = predicate()
            if value:
                return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def spooled(data: Path) -> list[str]:
    folder = data / "spool"
    return sorted(
        p.name
        for sub in (folder, folder / "claimed")
        if sub.is_dir()
        for p in sub.iterdir()
        if p.name.endswith(".hook")
    )


def health_ok(worker: LiveWorker) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(worker.url + "/api/health", timeout=1) as resp:
            return resp.status == 200
    except OSError:
        return False
