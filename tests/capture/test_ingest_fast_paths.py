"""The observation ingest's shortcuts keep the behaviour they replaced: cached exclusion
globs, the unique constraint as the duplicate check, the precompiled session lookup and
the redaction triggers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory.hooks.dispatch import hook_handle
from memory.models import Event, ExcludedProject, Session
from memory.privacy import redaction
from memory.projects import is_excluded

pytestmark = pytest.mark.django_db


def _observation(folder: Path, tool_use_id: str, **changes: Any) -> bytes:
    payload = {
        "session_id": "fast-paths",
        "transcript_path": str(folder / "t.jsonl"),
        "cwd": str(folder),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "pytest -q"},
        "tool_response": {"stdout": "test_a PASSED\npassword=hunter2hunter2\n", "stderr": ""},
        "tool_use_id": tool_use_id,
    }
    payload.update(changes)
    return json.dumps(payload).encode()


def _record(body: bytes) -> None:
    hook_handle(platform="claude-code", event="observation", body=body)


def test_an_excluded_glob_added_or_deleted_applies_to_the_next_hook_at_once() -> None:
    assert not is_excluded("/work/secret/app")
    row = ExcludedProject.objects.create(glob="/work/secret/**")
    assert is_excluded("/work/secret/app")
    row.delete()
    assert not is_excluded("/work/secret/app")


def test_a_tool_use_delivered_twice_is_stored_once_and_the_next_one_still_is(
    tmp_path: Path,
) -> None:
    _record(_observation(tmp_path, "toolu_1"))
    _record(_observation(tmp_path, "toolu_1"))  # retry of the same tool use
    _record(_observation(tmp_path, "toolu_2"))
    assert sorted(Event.objects.values_list("tool_use_id", flat=True)) == ["toolu_1", "toolu_2"]


def test_the_session_lookup_finds_the_session_and_records_a_new_cwd(tmp_path: Path) -> None:
    _record(_observation(tmp_path, "toolu_1"))
    moved = tmp_path / "sub"
    _record(_observation(tmp_path, "toolu_2", cwd=str(moved)))
    session = Session.objects.get()
    assert session.cwd == str(moved)
    assert session.started.tzinfo is not None
    assert Event.objects.filter(session=session).count() == 2


def test_output_full_of_passed_is_still_redacted(tmp_path: Path) -> None:
    _record(_observation(tmp_path, "toolu_1"))
    stdout = Event.objects.get().payload["tool_response"]["stdout"]
    assert "hunter2" not in stdout
    assert "[REDACTED:password]" in stdout
    assert redaction.redact_text("PASSED " * 50) == "PASSED " * 50


def test_a_burst_of_tool_uses_queues_one_compression_task_per_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    """Outside immediate mode (the worker's huey, storage in SQLite): the task queued for
    the burst's first tool use stands for the rest while it is still ahead (issue 19)."""
    from huey.contrib.djhuey import HUEY

    from memory.capture import ingest

    HUEY.immediate = False  # the conftest fixture sets it back for the next test
    HUEY.flush()
    monkeypatch.setattr(ingest, "_scheduled", {})
    clock = [1000.0]
    monkeypatch.setattr(ingest.time, "monotonic", lambda: clock[0])

    def record(tool_use_id: str, **changes: Any) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            _record(_observation(tmp_path, tool_use_id, **changes))

    try:
        for n in range(3):
            record(f"toolu_burst_{n}")
        assert Event.objects.count() == 3
        assert len(HUEY.pending()) == 1
        record("toolu_other", session_id="another-session")
        assert len(HUEY.pending()) == 2
        # The first task is due in less than _STILL_PENDING_S: it may be running, so a new
        # tool use of the session queues its own.
        clock[0] += ingest.COMPRESS_DELAY_S - ingest._STILL_PENDING_S / 2
        record("toolu_burst_late")
        assert len(HUEY.pending()) == 3
        session = Session.objects.get(session_id="fast-paths")
        assert [t.args for t in HUEY.pending()].count((session.pk,)) == 2
    finally:
        HUEY.flush()
