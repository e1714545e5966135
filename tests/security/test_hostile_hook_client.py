"""Hostile stdin through the real hook client (`cmem hook`) to a real worker: the hook always
exits 0 quickly, prints nothing the agent would misread, and says on stderr what it did."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tests.reliability.helpers import Session, rows, scalar
from tests.support import LiveWorker

pytestmark = pytest.mark.slow


def test_hostile_stdin_never_breaks_the_hook(live_worker: LiveWorker, tmp_path: Path) -> None:
    session = Session(tmp_path, session_id="hostile-cli")
    db = live_worker.data_dir / "cmem.sqlite3"
    assert live_worker.run_hook("session-init", session.prompt("hostile stdin")).returncode == 0

    # 10 MB of tool output: the client trims it to fit and the worker caps it; it is stored.
    huge = json.loads(session.bash(1))
    huge["tool_response"]["stdout"] = "head-marker " + "x" * (10 * 1024 * 1024) + " tail-marker"
    started = time.monotonic()
    result = live_worker.run_hook("observation", json.dumps(huge).encode(), timeout=60)
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    assert time.monotonic() - started < 15
    [(payload,)] = rows(db, "select payload from memory_event where tool_use_id='toolu_rel_0001'")
    assert len(payload) < 100_000 and "head-marker" in payload and "tail-marker" in payload

    cases = {
        "binary": os.urandom(4096),
        "not json": b"this is not json at all",
        "deep nesting": b'{"session_id": "x", "cwd": "/tmp", "tool_input": '
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}",
        "json array": b"[1, 2, 3]",
        "wrong types": json.dumps({"session_id": ["x"], "cwd": 5, "tool_input": "no"}).encode(),
        "empty": b"",
    }
    for name, body in cases.items():
        for event in ("session-init", "observation", "context", "file-context"):
            started = time.monotonic()
            result = live_worker.run_hook(event, body)
            assert result.returncode == 0, (name, event)
            assert time.monotonic() - started < 10, (name, event)
            assert result.stdout in (b"", b"{}"), (name, event, result.stdout[:200])
            assert result.stderr == b"" or result.stderr.startswith(b"cmem: "), (
                name,
                event,
                result.stderr[:300],
            )
    # Nothing hostile was stored, nothing failed in the worker, and the spool kept none of it.
    assert scalar(db, "select count(*) from memory_event") == 1
    assert (
        not list((live_worker.data_dir / "spool").glob("*.hook"))
        if (live_worker.data_dir / "spool").exists()
        else True
    )
    assert live_worker.run_hook("observation", session.bash(2)).returncode == 0
    assert scalar(db, "select count(*) from memory_event") == 2
