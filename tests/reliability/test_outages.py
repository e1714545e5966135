"""Outages: the worker down for a whole session, the Anthropic API down for a long stretch,
the database locked by another writer, the disk full. In each, the hook exits 0 at once,
says what happened, and nothing that could be kept is lost or stored twice."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from tests.fakes.anthropic import FakeAnthropic, Reply
from tests.reliability.helpers import (
    Session,
    api_settings,
    echo_observations,
    hook,
    integrity,
    new_worker,
    rows,
    scalar,
    spooled,
    wait_for,
)
from tests.support import owner_open

pytestmark = pytest.mark.slow

# The hook must never hold the agent: even when nothing works, it answers within this.
AT_ONCE_S = 3.0


def _block_worker_start(data: Path) -> None:
    """A fresh spawn lock: every hook believes another hook is starting the worker, so none
    starts one (a worker that cannot start, for the whole session)."""
    lock = data / "worker.spawn.lock"
    lock.write_text("0 0\n")
    os.utime(lock)


def test_worker_down_for_a_whole_session_spools_everything_then_ingests_in_order_once(
    tmp_path: Path,
) -> None:
    worker = new_worker(tmp_path, CLAUDE_MEM_COMPRESSOR="offline")
    data = worker.data_dir
    session = Session(tmp_path, session_id="offline-session")
    plan: list[tuple[str, bytes]] = [
        ("session-init", session.prompt("first request", prompt_id="p1")),
        *[("observation", session.bash(n)) for n in range(4)],
        ("observation", session.bash(2)),  # Claude Code re-delivered a tool use
        ("summarize", session.stop("first turn done")),
        ("session-init", session.prompt("second request", prompt_id="p2")),
        *[("observation", session.bash(n)) for n in range(4, 7)],
        ("summarize", session.stop("second turn done")),
        ("session-end", session.end()),
    ]
    for event, payload in plan:
        _block_worker_start(data)
        result, took = hook(worker.env, event, payload)
        assert result.returncode == 0 and result.stdout == b""
        assert "saved to the spool" in result.stderr.decode(), result.stderr
        assert took < AT_ONCE_S
    files = spooled(data)
    assert len(files) == len(plan)
    assert [f.split(".")[4] for f in files] == [
        event for event, _ in plan
    ]  # names sort in send order
    assert not (data / "worker.pid").exists()

    (data / "worker.spawn.lock").unlink()
    worker.start()  # the consumer drains the spool at start
    try:
        db = data / "cmem.sqlite3"
        wait_for(
            lambda: (
                not spooled(data)
                and scalar(db, "select count(*) from memory_event where status='done'") == 9
            ),
            90,
            "the spool to be ingested and compressed",
        )
        assert [r[0] for r in rows(db, "select text from memory_prompt order by number")] == [
            "first request",
            "second request",
        ]
        ids = [
            r[0]
            for r in rows(
                db, "select tool_use_id from memory_event where kind='observation' order by id"
            )
        ]
        assert ids == [f"toolu_rel_{n:04d}" for n in range(7)]  # in order, the re-delivery once
        assert scalar(db, "select count(*) from memory_event where kind='summary'") == 2
        wait_for(
            lambda: scalar(db, "select count(*) from memory_summary") == 2, 30, "both summaries"
        )
        assert scalar(db, "select status from memory_session") == "completed"
        assert (
            not list((data / "spool" / "failed").glob("*"))
            if (data / "spool" / "failed").exists()
            else True
        )
    finally:
        worker.stop()


def test_api_down_for_a_long_stretch_goes_offline_says_so_and_loses_nothing(tmp_path: Path) -> None:
    fake = FakeAnthropic(default=Reply(status=529, error_message="Overloaded")).start()
    worker = new_worker(
        tmp_path, **api_settings(fake.url, CLAUDE_MEM_API_RETRIES="1", CLAUDE_MEM_BATCH_SIZE="2")
    )
    session = Session(tmp_path, session_id="api-down")
    try:
        worker.start()  # inside: the fake API stops even if the worker does not start
        db = worker.data_dir / "cmem.sqlite3"
        assert (
            hook(worker.env, "session-init", session.prompt("work while the API is down"))[
                0
            ].returncode
            == 0
        )
        for n in range(8):
            result, took = hook(worker.env, "observation", session.bash(n))
            assert result.returncode == 0 and took < AT_ONCE_S
        assert hook(worker.env, "summarize", session.stop("done"))[0].returncode == 0
        wait_for(
            lambda: scalar(db, "select count(*) from memory_event where status='done'") == 9,
            90,
            "the first wave",
        )
        # The API was tried (with its retry) until the observer counted it degraded, no more.
        tried = len(fake.requests)
        assert 3 <= tried <= 3 * 2 + 2, tried
        # Past the retry budget the offline compressor takes over at once: a second wave is
        # compressed without waiting on the API, so the queue does not pile up.
        pending_seen = []
        for n in range(8, 16):
            assert hook(worker.env, "observation", session.bash(n))[0].returncode == 0
            pending_seen.append(
                scalar(
                    db, "select count(*) from memory_event where status in ('pending','claimed')"
                )
            )
        wait_for(
            lambda: scalar(db, "select count(*) from memory_event where status='done'") == 17,
            30,
            "the second wave",
        )
        assert len(fake.requests) == tried
        # Bounded by what this burst sent (the first wave had drained), and back to zero while
        # the API is still down.
        assert max(pending_seen) <= 8, pending_seen
        # The task queue drains too (the consumer's own follow-up tasks, e.g. embedding the
        # new rows, may be in it for a moment: bounded, never piling up).
        wait_for(
            lambda: scalar(worker.data_dir / "huey.sqlite3", "select count(*) from task") <= 5,
            30,
            "the task queue to drain",
        )
        # Nothing lost: every tool use is in an observation written by the offline compressor.
        assert scalar(db, "select count(*) from memory_event where status!='done'") == 0
        titles = " ".join(
            r[0] + " " + (r[1] or "")
            for r in rows(db, "select title, narrative from memory_observation")
        )
        assert {r[0] for r in rows(db, "select compressor from memory_observation")} == {"offline"}
        assert scalar(db, "select count(*) from memory_summary where compressor='offline'") == 1
        assert scalar(db, "select count(*) from memory_observation") >= 1 and "tool-" in titles
        # The SessionStart header and every page say memory is degraded.
        context, _ = hook(worker.env, "context", session.start())
        assert "degraded" in context.stdout.decode() and "529" in context.stdout.decode()
        page = owner_open(worker.data_dir, worker.url + "/").decode()
        assert 'id="observer-warning"' in page and "degraded" in page
    finally:
        worker.stop()
        fake.stop()


def test_database_locked_by_another_writer_degrades_then_recovers(tmp_path: Path) -> None:
    fake = FakeAnthropic(default=Reply(fn=echo_observations)).start()
    # The first compression request takes 3 s: the lock below is taken while it runs, so the
    # consumer's store meets the lock too (it must hand the events back, not fail them).
    fake.script(Reply(fn=lambda body: echo_observations(body, delay=3)))
    worker = new_worker(tmp_path, **api_settings(fake.url, CLAUDE_MEM_HOOK_TIMEOUT_MS="800"))
    session = Session(tmp_path, session_id="locked")
    try:
        worker.start()  # inside: the fake API stops even if the worker does not start
        db = worker.data_dir / "cmem.sqlite3"
        assert hook(worker.env, "session-init", session.prompt("lock test"))[0].returncode == 0
        assert hook(worker.env, "observation", session.bash(0))[0].returncode == 0
        assert fake.wait_for_requests(1, timeout=60)
        blocker = sqlite3.connect(db, timeout=1, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # another writer holds the lock...
        locked_at = time.monotonic()
        try:
            result, took = hook(worker.env, "observation", session.bash(1))
            assert result.returncode == 0 and result.stdout == b""
            assert took < AT_ONCE_S  # ...the hook does not wait for it
            warning = result.stderr.decode()
            assert "did not answer in time" in warning and "saved to the spool" in warning, warning
            # Past the reply (3 s) plus the worker's busy_timeout (5 s): its writes fail.
            time.sleep(max(0.0, 9.0 - (time.monotonic() - locked_at)))
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        # Recovery: the next hook is stored at once, and the spooled event follows, once.
        result, _ = hook(worker.env, "observation", session.bash(2))
        assert result.returncode == 0 and result.stderr == b"", result.stderr

        def recovered() -> bool:
            if spooled(worker.data_dir):
                hook(worker.env, "observation", session.bash(2))  # a live hook kicks the ingest
                return False
            return scalar(db, "select count(*) from memory_event where status='done'") == 3

        wait_for(recovered, 60, "every event stored and compressed", interval=2.5)
        ids = sorted(r[0] for r in rows(db, "select tool_use_id from memory_event"))
        assert ids == ["toolu_rel_0000", "toolu_rel_0001", "toolu_rel_0002"]
        titles = sorted(r[0] for r in rows(db, "select title from memory_observation"))
        assert titles == ["obs of tool-0", "obs of tool-1", "obs of tool-2"]
        assert scalar(db, "select count(*) from memory_event where status='failed'") == 0
        assert integrity(db) == "ok"
        logs = " ".join(
            p.read_text(errors="replace") for p in (worker.data_dir / "logs").glob("*.log")
        )
        assert "database is locked" in logs and "database busy while compressing" in logs
    finally:
        worker.stop()
        fake.stop()


@contextlib.contextmanager
def _tiny_disk(path: Path, size: str):  # type: ignore[no-untyped-def]
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _fill(folder: Path) -> Path:
    filler = folder / "filler.bin"
    # suppress outside open: the close flushes what the failed write left in the buffer,
    # and that raises ENOSPC again.
    with contextlib.suppress(OSError), open(filler, "wb") as fh:
        while True:
            fh.write(b"\0" * 65536)
            fh.flush()
    return filler


def test_disk_full_degrades_with_a_warning_and_recovers_without_corruption(tmp_path: Path) -> None:
    with _tiny_disk(tmp_path / "disk", "48m") as disk:
        worker = new_worker(disk, CLAUDE_MEM_COMPRESSOR="offline")
        session = Session(tmp_path, session_id="disk-full")
        worker.start()
        try:
            db = worker.data_dir / "cmem.sqlite3"
            assert hook(worker.env, "session-init", session.prompt("disk test"))[0].returncode == 0
            assert hook(worker.env, "observation", session.bash(0))[0].returncode == 0
            filler = _fill(worker.data_dir)
            outcomes = []
            for n in range(1, 4):
                result, took = hook(
                    worker.env, "observation", session.bash(n, stdout="x" * 200_000)
                )
                assert result.returncode == 0 and took < AT_ONCE_S + 2
                outcomes.append(result.stderr.decode())
            # Each one was either stored, or the hook said clearly that it could not keep it.
            for text in outcomes:
                assert text == "" or "cmem:" in text
            assert any(
                "No space left" in t or "could not spool" in t or "answered 5" in t
                for t in outcomes
            ), outcomes
            filler.unlink()  # space returns
            result, _ = hook(worker.env, "observation", session.bash(9))
            assert result.returncode == 0 and result.stderr == b"", result.stderr
            wait_for(
                lambda: (
                    "toolu_rel_0009"
                    in {r[0] for r in rows(db, "select tool_use_id from memory_event")}
                ),
                30,
                "capture to resume",
            )
            assert integrity(db) == "ok"
            assert (
                json.loads(urllib.request.urlopen(worker.url + "/api/health", timeout=5).read())[
                    "status"
                ]
                == "ok"
            )
        finally:
            worker.stop()
            shutil.rmtree(worker.data_dir, ignore_errors=True)


def test_a_slow_worker_never_holds_the_agent(tmp_path: Path) -> None:
    """Many hooks at once against one worker whose database is locked: each returns within
    the hook timeout, every one exits 0."""
    worker = new_worker(tmp_path, CLAUDE_MEM_COMPRESSOR="offline", CLAUDE_MEM_HOOK_TIMEOUT_MS="500")
    session = Session(tmp_path, session_id="crowd")
    worker.start()
    try:
        db = worker.data_dir / "cmem.sqlite3"
        assert hook(worker.env, "session-init", session.prompt("crowd"))[0].returncode == 0
        blocker = sqlite3.connect(db, timeout=1, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        times: list[float] = []
        codes: list[int] = []

        def one(n: int) -> None:
            result, took = hook(worker.env, "observation", session.bash(n))
            times.append(took)
            codes.append(result.returncode)

        threads = [threading.Thread(target=one, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        blocker.execute("ROLLBACK")
        blocker.close()
        assert codes == [0] * 8
        assert max(times) < AT_ONCE_S + 2, (
            times
        )  # 8 processes on a loaded machine: timeout + start-up
        wait_for(
            lambda: (
                hook(worker.env, "observation", session.bash(100)),
                scalar(db, "select count(*) from memory_event where kind='observation'") == 9,
            )[1],
            60,
            "all eight to arrive through the spool",
            interval=2.5,
        )
        # Delivered means gone from the spool, nothing left to replay twice (the drain also runs
        # once a minute, hence the wait).
        wait_for(lambda: spooled(worker.data_dir) == [], 90, "the spool to empty", interval=1)
    finally:
        worker.stop()
