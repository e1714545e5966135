"""The automatic syncs (issue 34): off by default; a schedule that waits for its interval;
SessionEnd only enqueues, after its commit; a failing background sync is a log line."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory import extensions
from memory.agents.base import HookEvent
from memory.capture.ingest import session_end
from memory.models import Session
from memory.travel.sync import tasks
from memory.travel.sync.state import SyncState, state_save

pytestmark = pytest.mark.django_db


def test_the_schedule_is_off_by_default_and_waits_for_its_interval(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not tasks.sync_due()
    monkeypatch.setenv("CLAUDE_MEM_SYNC_AUTO", "schedule")
    assert not tasks.sync_due()  # no remote yet
    monkeypatch.setenv("CLAUDE_MEM_SYNC_REMOTE", "/nowhere.git")
    assert tasks.sync_due()  # never synced
    now = datetime.now(UTC)
    state_save(
        SyncState(remote="/nowhere.git", last_sync=(now - timedelta(minutes=30)).isoformat())
    )
    assert not tasks.sync_due(now)
    assert tasks.sync_due(now + timedelta(minutes=31))


def test_a_failing_background_sync_is_logged_not_raised(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_SYNC_REMOTE", str(data_dir / "not-a-repo"))
    with caplog.at_level(logging.WARNING):
        assert tasks.sync_quietly() == ""
    assert "automatic sync failed" in caplog.text


def test_session_end_enqueues_a_sync_after_its_commit_only_when_asked(
    data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: object,
) -> None:
    queued: list[int] = []
    monkeypatch.setattr(tasks, "sync_task", lambda: queued.append(1))
    monkeypatch.setattr(extensions, "_session_ended", [tasks.on_session_ended])
    Session.objects.create(
        platform="claude-code", session_id="s1", project="demo", cwd=str(data_dir)
    )
    event = HookEvent(
        platform="claude-code", event="session-end", session_id="s1", cwd=str(data_dir), raw={}
    )
    with django_capture_on_commit_callbacks(execute=True):  # type: ignore[operator]
        session_end(event=event)
    assert queued == []  # CLAUDE_MEM_SYNC_AUTO is off by default
    monkeypatch.setenv("CLAUDE_MEM_SYNC_AUTO", "session-end")
    monkeypatch.setenv("CLAUDE_MEM_SYNC_REMOTE", "/somewhere.git")
    Session.objects.filter(session_id="s1").update(status=Session.Status.ACTIVE)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:  # type: ignore[operator]
        session_end(event=event)
        assert queued == []  # not inside the hook's transaction
    assert callbacks and queued == [1]
