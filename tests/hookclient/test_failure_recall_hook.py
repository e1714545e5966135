"""Failure recall through the real hook client (`cmem hook` and the installed `-I -S` entry)
against a real worker, and against a worker that is down or does not answer."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.agents.install.claude_code import hook_entry_argv
from tests.support import CLAUDE_FIXTURES, CMEM, LiveWorker, free_port, make_worker_env

pytestmark = pytest.mark.slow

ERROR = "ModuleNotFoundError: No module named 'nosuchmod_xyz'"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveWorker, Path]]:
    root = tmp_path_factory.mktemp("failure-recall-hook")
    data, project = root / "data", root / "demo"
    data.mkdir(mode=0o700)
    project.mkdir()
    port = free_port()
    live = LiveWorker(data_dir=data, port=port, env=make_worker_env(data, port))
    live.start()
    try:
        # A fix a person recorded in this project, by the CLI as they would.
        done = subprocess.run(
            [CMEM, "remember", "Fixed the import of nosuchmod_xyz",
             f"python3 -c 'import nosuchmod_xyz' failed with {ERROR}; fixed by adding "
             "lib/nosuchmod_xyz.py and PYTHONPATH=lib", "--kind", "bugfix"],
            cwd=project, env=live.env, capture_output=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        yield live, project
    finally:
        live.stop()


def _payload(project: Path, sid: str, n: int = 1) -> bytes:
    data = json.loads((CLAUDE_FIXTURES / "PostToolUseFailure.bash.json").read_text())
    data.update(cwd=str(project), session_id=sid, tool_use_id=f"toolu_{sid}_{n}")
    return json.dumps(data).encode()


def test_the_installed_entry_prints_the_recalled_fix_once(world: tuple[LiveWorker, Path]) -> None:
    live, project = world
    entry = [*hook_entry_argv(), "hook", "claude-code", "observation"]
    started = time.monotonic()
    done = subprocess.run(
        entry, input=_payload(project, "hook-1"), env=live.env, capture_output=True, timeout=30
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    spec = json.loads(done.stdout)["hookSpecificOutput"]
    assert spec["hookEventName"] == "PostToolUseFailure"
    assert "Fixed the import of nosuchmod_xyz" in spec["additionalContext"]
    assert "written by you" in spec["additionalContext"]
    assert elapsed < 5, elapsed
    # The same error again in the session: nothing more.
    again = subprocess.run(
        entry, input=_payload(project, "hook-1", 2), env=live.env, capture_output=True, timeout=30
    )
    assert again.returncode == 0 and json.loads(again.stdout) == {}
    # `cmem hook` is the same client.
    other = live.run_hook("observation", _payload(project, "hook-2"))
    assert other.returncode == 0 and b"nosuchmod_xyz" in other.stdout


def test_worker_down_no_context_no_error_and_the_failure_is_kept(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    env = make_worker_env(data, free_port(), CMEM_NO_SPAWN="1")
    started = time.monotonic()
    done = subprocess.run(
        [CMEM, "hook", "claude-code", "observation"],
        input=_payload(tmp_path, "down-1"), env=env, capture_output=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == b""
    assert time.monotonic() - started < 3
    assert b"continuing without memory" in done.stderr
    assert list((data / "spool").glob("*.hook"))


def test_a_worker_that_does_not_answer_costs_at_most_the_hook_timeout(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    # Something listens on the worker's socket and never answers.
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(data / "worker.sock"))
    listener.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        env = make_worker_env(
            data, free_port(), CMEM_NO_SPAWN="1", CLAUDE_MEM_HOOK_TIMEOUT_MS="400"
        )
        started = time.monotonic()
        done = subprocess.run(
            [CMEM, "hook", "claude-code", "observation"],
            input=_payload(tmp_path, "slow-1"), env=env, capture_output=True, timeout=30,
        )  # fmt: skip
        elapsed = time.monotonic() - started
        assert done.returncode == 0 and done.stdout == b""
        assert b"continuing without memory" in done.stderr
        assert elapsed < 2.5, elapsed
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        listener.close()
