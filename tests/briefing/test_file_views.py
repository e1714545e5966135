from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memory.agents import claude_code
from memory.briefing.file_views import file_view_record_from_tool, file_views_reset
from memory.models import FileView, Session
from tests.briefing.gate_helpers import fixture, make_project, sha, write_file
from tests.factories import SessionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path)


@pytest.fixture
def session(root: Path) -> Session:
    return SessionFactory(root=root, session_id="sid")


def record(
    session: Session,
    root: Path,
    tool: str,
    tool_input: dict[str, Any],
    response: Any = None,
    name: str = "PostToolUse.json",
) -> FileView | None:
    payload = fixture(name)
    payload.update(
        cwd=str(root), session_id=session.session_id, tool_name=tool, tool_input=tool_input
    )
    if response is not None:
        payload["tool_response"] = response
    return file_view_record_from_tool(
        session=session, event=claude_code.parse("observation", payload)
    )


def read_response(path: Path, num: int, total: int, start: int = 1) -> dict[str, Any]:
    return {
        "type": "text",
        "file": {
            "filePath": str(path),
            "content": "…",
            "numLines": num,
            "startLine": start,
            "totalLines": total,
        },
    }


def test_a_full_read_is_a_full_view_of_the_file_on_disk(session, root) -> None:
    target = write_file(root, "target.txt")
    view = record(session, root, "Read", {"file_path": str(target)}, read_response(target, 31, 31))
    assert view is not None
    view.refresh_from_db()
    assert (view.path, view.partial, view.content_hash, view.size) == (
        str(target),
        False,
        sha(target),
        3000,
    )
    assert view.offset is None and view.limit is None and view.mtime == target.stat().st_mtime


def test_a_read_with_offset_and_limit_is_partial(session, root) -> None:
    target = write_file(root, "target.txt")
    payload = fixture("PostToolUse.read_offset_limit.json")
    payload.update(cwd=str(root), session_id=session.session_id)
    payload["tool_input"]["file_path"] = str(target)
    file_view_record_from_tool(session=session, event=claude_code.parse("observation", payload))
    view = FileView.objects.get()
    assert (view.partial, view.offset, view.limit) == (True, 5, 3)


def test_a_truncated_read_is_partial(session, root) -> None:
    target = write_file(root, "big.txt", size=200_000)
    record(session, root, "Read", {"file_path": str(target)}, read_response(target, 2000, 5400))
    assert FileView.objects.get().partial


def test_a_relative_path_is_stored_absolute(session, root) -> None:
    write_file(root, "src/a.py")
    record(
        session, root, "Read", {"file_path": "src/a.py"}, read_response(root / "src/a.py", 10, 10)
    )
    assert FileView.objects.get().path == str(root / "src/a.py")


@pytest.mark.parametrize(
    ("tool", "key"),
    [
        ("Edit", "file_path"),
        ("MultiEdit", "file_path"),
        ("Write", "file_path"),
        ("NotebookEdit", "notebook_path"),
    ],
)
def test_writes_leave_a_full_view_of_the_new_content(session, root, tool, key) -> None:
    target = write_file(root, "target.txt")
    record(
        session,
        root,
        "Read",
        {"file_path": str(target), "offset": 1, "limit": 3},
        read_response(target, 3, 31),
    )
    write_file(root, "target.txt", text="new content\n" * 300)
    record(session, root, tool, {key: str(target)}, {"filePath": str(target)})
    view = FileView.objects.get()
    assert (view.partial, view.content_hash, view.offset, view.limit) == (
        False,
        sha(target),
        None,
        None,
    )


def test_a_partial_read_of_unchanged_content_keeps_the_full_view(session, root) -> None:
    target = write_file(root, "target.txt")
    record(session, root, "Read", {"file_path": str(target)}, read_response(target, 31, 31))
    record(
        session,
        root,
        "Read",
        {"file_path": str(target), "offset": 3, "limit": 2},
        read_response(target, 2, 31, start=3),
    )
    assert not FileView.objects.get().partial
    write_file(root, "target.txt", text="changed\n" * 400)
    record(
        session,
        root,
        "Read",
        {"file_path": str(target), "offset": 3, "limit": 2},
        read_response(target, 2, 400, start=3),
    )
    assert FileView.objects.get().partial


def test_failed_tools_and_other_tools_record_nothing(session, root) -> None:
    target = write_file(root, "target.txt")
    payload = fixture("PostToolUseFailure.json")
    payload.update(
        cwd=str(root),
        session_id=session.session_id,
        tool_name="Edit",
        tool_input={"file_path": str(target)},
    )
    assert (
        file_view_record_from_tool(session=session, event=claude_code.parse("observation", payload))
        is None
    )
    assert record(session, root, "Bash", {"command": f"cat {target}"}) is None
    assert not FileView.objects.exists()


def test_a_missing_file_is_recorded_without_fingerprint(session, root) -> None:
    record(
        session,
        root,
        "Read",
        {"file_path": str(root / "gone.txt")},
        read_response(root / "gone.txt", 3, 3),
    )
    view = FileView.objects.get()
    assert view.content_hash == "" and view.size is None


def test_team_mode_facts_are_used_instead_of_the_disk(session, root) -> None:
    path = str(root / "remote.py")
    payload = fixture("PostToolUse.json")
    payload.update(
        cwd=str(root),
        session_id=session.session_id,
        tool_input={"file_path": path},
        cmem_file_facts={path: {"size": 9000, "mtime": 5.0, "sha256": "e" * 64}},
    )
    file_view_record_from_tool(session=session, event=claude_code.parse("observation", payload))
    view = FileView.objects.get()
    assert (view.size, view.mtime, view.content_hash) == (9000, 5.0, "e" * 64)


def test_reset_forgets_only_that_sessions_views(session, root) -> None:
    other = SessionFactory(root=root, session_id="other")
    target = write_file(root, "target.txt")
    record(session, root, "Read", {"file_path": str(target)}, read_response(target, 31, 31))
    record(other, root, "Read", {"file_path": str(target)}, read_response(target, 31, 31))
    assert file_views_reset(session=session) == 1
    assert list(FileView.objects.values_list("session__session_id", flat=True)) == ["other"]
