"""A change only the capture's file hashes reveal is recorded across batches and sessions:
a later Read whose hash differs from the one cmem last recorded (an earlier batch's or an
earlier session's observation file, another session's file view) becomes a `change`
observation of that file, put down to the session's shell command that ran in between, or
"changed outside the session" when none did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memory.compression.tasks import session_events_process_task
from memory.models import FileView, Observation, ObservationFile, Summary
from tests.factories import SessionFactory
from tests.fakes import add_event, bash_payload, post_tool_use

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "shop"
    path.mkdir()
    return path


def read(root: Path, sha: str, rel: str = "schema.py") -> dict[str, Any]:
    return post_tool_use(
        "Read",
        {"file_path": str(root / rel)},
        {"type": "text", "file": {"filePath": str(root / rel), "content": "X = 1\n"}},
        cwd=str(root),
        files=[{"path": rel, "abs": str(root / rel), "role": "read", "sha256": sha}],
    )


def changes_of(session: Any) -> list[Observation]:
    rows = Observation.objects.filter(session=session).exclude(tool_name="Bash").order_by("pk")
    return [o for o in rows if "schema.py" in o.files_modified]


def test_a_shell_command_of_an_earlier_batch_is_blamed(root: Path) -> None:
    session = SessionFactory(root=root, prompt="regenerate the schema")
    add_event(session, read(root, "a" * 64))
    add_event(session, bash_payload("python tools/regen.py", root, stdout="regenerated"))
    session_events_process_task(session.pk)  # batch 1: the read and the command
    assert not changes_of(session)
    add_event(session, read(root, "b" * 64))
    add_event(
        session, {"hook_event_name": "Stop", "last_assistant_message": "Done."}, kind="summary"
    )
    session_events_process_task(session.pk)  # batch 2: the read that shows the new hash
    [change] = changes_of(session)
    assert change.type == "change"
    assert change.title == "Changed schema.py (run it)"  # the command's own description
    assert change.files_modified == ["schema.py"]
    row = ObservationFile.objects.get(observation=change, role="modified")
    assert (row.path, row.content_hash) == ("schema.py", "b" * 64)
    assert "earlier shell command" in " ".join(change.facts)
    summary = Summary.objects.get(session=session)
    assert "modified schema.py" in summary.completed
    assert "No file changes" not in summary.completed


def test_a_change_between_two_sessions_is_a_change_outside_the_session(root: Path) -> None:
    first = SessionFactory(root=root, session_id="s-1")
    add_event(first, read(root, "a" * 64))
    session_events_process_task(first.pk)
    second = SessionFactory(root=root, session_id="s-2")
    add_event(second, read(root, "b" * 64))
    session_events_process_task(second.pk)
    [change] = changes_of(second)
    assert change.title == "schema.py changed outside the session"
    assert change.type == "change" and change.files_modified == ["schema.py"]
    assert ObservationFile.objects.filter(
        observation=change, role="modified", content_hash="b" * 64
    ).exists()


def test_another_sessions_file_view_counts_as_the_last_known_hash(root: Path) -> None:
    first = SessionFactory(root=root, session_id="s-1")
    FileView.objects.create(session=first, path=str(root / "schema.py"), content_hash="a" * 64)
    second = SessionFactory(root=root, session_id="s-2")
    add_event(second, read(root, "b" * 64))
    session_events_process_task(second.pk)
    assert [c.title for c in changes_of(second)] == ["schema.py changed outside the session"]


def test_an_unchanged_hash_or_a_change_already_recorded_adds_nothing(root: Path) -> None:
    first = SessionFactory(root=root, session_id="s-1")
    add_event(first, read(root, "a" * 64))
    session_events_process_task(first.pk)
    second = SessionFactory(root=root, session_id="s-2")
    add_event(second, read(root, "a" * 64))  # same content: nothing changed
    add_event(second, bash_payload("sed -i 's/1/2/' schema.py", root))
    session_events_process_task(second.pk)
    add_event(second, read(root, "c" * 64))  # the sed's own observation already says so
    session_events_process_task(second.pk)
    assert not changes_of(second)
    sed = Observation.objects.get(session=second, tool_name="Bash")
    assert sed.files_modified == ["schema.py"]


def test_zh_titles_for_hash_changes(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_LANGUAGE", "zh")
    first = SessionFactory(root=root, session_id="s-1")
    add_event(first, read(root, "a" * 64))
    session_events_process_task(first.pk)
    second = SessionFactory(root=root, session_id="s-2")
    add_event(second, read(root, "b" * 64))
    session_events_process_task(second.pk)
    assert [c.title for c in changes_of(second)] == ["schema.py 在会话之外被修改"]


def test_a_teammates_hash_is_not_evidence_in_another_users_memory(root: Path) -> None:
    """Team mode: Alice's hash of the file (an observation file and a file view) must not
    become a "changed" note in Bob's memory; his own earlier hash still does."""
    from django.contrib.auth import get_user_model

    alice, bob = (get_user_model().objects.create(username=n) for n in ("alice", "bob"))
    first = SessionFactory(root=root, session_id="s-alice", owner=alice)
    add_event(first, read(root, "a" * 64))
    session_events_process_task(first.pk)
    FileView.objects.create(session=first, path=str(root / "schema.py"), content_hash="c" * 64)
    second = SessionFactory(root=root, session_id="s-bob", owner=bob)
    add_event(second, read(root, "b" * 64))
    session_events_process_task(second.pk)
    assert changes_of(second) == []
    third = SessionFactory(root=root, session_id="s-bob-2", owner=bob)
    add_event(third, read(root, "d" * 64))
    session_events_process_task(third.pk)
    assert [c.title for c in changes_of(third)] == ["schema.py changed outside the session"]
