"""The observation ingest's shortcuts keep the behaviour they replaced: cached exclusion
globs, the unique constraint as the duplicate check, the precompiled session lookup and
the redaction triggers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memory.capture import privacy
from memory.hooks import hook_handle
from memory.models import Event, ExcludedProject, Session
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
    assert privacy.redact_text("PASSED " * 50) == "PASSED " * 50
