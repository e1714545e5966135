from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from django.test import Client

from deliverables.models import Deliverable
from deliverables.services import deliverables_capture, deliverables_root, paths_from_transcript
from memory.agents.base import HookEvent
from memory.models import Event, Session
from tests.factories import SessionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "scratch"
    folder.mkdir()
    return folder


def _write_event(session: Session, tool: str, path: str, number: int = 1, **extra: str) -> None:
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    Event.objects.create(
        session=session,
        kind=Event.Kind.OBSERVATION,
        tool_name=tool,
        prompt_number=number,
        payload={"tool_name": tool, "tool_input": {key: path, **extra}},
    )


def _stop(session: Session, transcript: str = "") -> HookEvent:
    return HookEvent(
        platform="claude-code",
        event="summarize",
        session_id=session.session_id,
        cwd=session.cwd,
        transcript_path=transcript,
    )


def test_copies_files_written_outside_the_project(project: Path, outside: Path) -> None:
    session = SessionFactory(
        root=project, project="repo", session_id="sid-1", prompt="make me a report"
    )
    report = outside / "report.md"
    report.write_bytes(b"# Report\nall good\n")
    inside = project / "app.py"
    inside.write_text("print('hi')\n")
    _write_event(session, "Write", str(report))
    _write_event(session, "Edit", str(inside))

    made = deliverables_capture(session=session, event=_stop(session))

    assert [d.name for d in made] == ["report.md"]
    d = made[0]
    assert d.size == len(report.read_bytes())
    assert d.sha256 == hashlib.sha256(report.read_bytes()).hexdigest()
    assert d.prompt is not None and d.prompt.number == 1
    assert d.project == "repo"
    assert d.content_type == "text/markdown"
    stored = deliverables_root() / d.stored_path
    assert stored.read_bytes() == report.read_bytes()
    assert stored.parent.parent.name == "repo"  # <project>/<date>/<name>


def test_only_the_current_turn_counts(project: Path, outside: Path) -> None:
    session = SessionFactory(
        root=project, project="repo", session_id="sid-1", prompt="make me a report"
    )
    old = outside / "old.txt"
    old.write_text("from turn 0")
    _write_event(session, "Write", str(old), number=0)
    assert deliverables_capture(session=session, event=_stop(session)) == []


def test_all_write_tools_and_relative_paths(project: Path, outside: Path) -> None:
    session = SessionFactory(
        root=project, project="repo", session_id="sid-1", prompt="make me a report"
    )
    for name in ("a.txt", "b.txt", "c.ipynb"):
        (outside / name).write_text(name)
    _write_event(session, "MultiEdit", str(outside / "a.txt"))
    _write_event(session, "NotebookEdit", str(outside / "c.ipynb"))
    _write_event(session, "Write", os.path.relpath(outside / "b.txt", project))
    made = deliverables_capture(session=session, event=_stop(session))
    assert sorted(d.name for d in made) == ["a.txt", "b.txt", "c.ipynb"]


def test_codex_apply_patch_paths(project: Path, outside: Path) -> None:
    session = SessionFactory(
        root=project, project="repo", session_id="sid-1", prompt="make me a report"
    )
    target = outside / "hello.txt"
    target.write_text("HELLO-PATCH\n")
    patch = f"*** Begin Patch\n*** Add File: {target}\n+HELLO-PATCH\n*** Update File: src/file.txt\n@@\n*** End Patch\n"
    Event.objects.create(
        session=session,
        kind=Event.Kind.OBSERVATION,
        tool_name="apply_patch",
        prompt_number=1,
        payload={"tool_name": "apply_patch", "tool_input": {"command": patch}},
    )
    made = deliverables_capture(session=session, event=_stop(session))
    assert [d.name for d in made] == ["hello.txt"]


def test_transcript_fills_in_missing_events(project: Path, outside: Path, tmp_path: Path) -> None:
    session = SessionFactory(
        root=project, project="repo", session_id="sid-1", prompt="make me a report"
    )
    late = outside / "slides.html"
    late.write_text("<h1>slides</h1>")
    earlier = outside / "earlier.txt"
    earlier.write_text("from the previous turn")
    lines = [
        {"type": "user", "message": {"role": "user", "content": "first prompt"}},
        {
            "type": "assistant",
            "message": {
                "content": [
                    {
                        "type": "tool_use",
                        "id": "tu-a",
                        "name": "Write",
                        "input": {"file_path": str(earlier)},
                    }
                ]
            },
        },
        {
            "type": "user",
            "message": {
                "content": [{"type": "tool_result", "tool_use_id": "tu-a", "content": "ok"}]
            },
        },
        {"type": "user", "message": {"role": "user", "content": "make slides"}},
        {
            "type": "assistant",
            "message": {
                "content": [
                    {"type": "text", "text": "sure"},
                    {
                        "type": "tool_use",
                        "id": "tu-b",
                        "name": "Write",
                        "input": {"file_path": str(late)},
                    },
                ]
            },
        },
        {
            "type": "user",
            "message": {
                "content": [{"type": "tool_result", "tool_use_id": "tu-b", "content": "written"}]
            },
        },
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "done"}]}},
    ]
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(json.dumps(x) for x in lines) + "\n{broken json\n")
    assert paths_from_transcript(str(transcript)) == [str(late)]
    made = deliverables_capture(session=session, event=_stop(session, str(transcript)))
    assert [d.name for d in made] == ["slides.html"]


def test_real_fixture_transcript_reads_without_error() -> None:
    from tests.support import CLAUDE_FIXTURES

    assert (
        paths_from_transcript(str(CLAUDE_FIXTURES / "transcript.basic.jsonl")) == []
    )  # only a Read


def test_disabled_by_setting(project: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_DELIVERABLES_ENABLED", "false")
    session = SessionFactory(
        root=project, project="repo", session_id="sid-1", prompt="make me a report"
    )
    (outside / "x.txt").write_text("x")
    _write_event(session, "Write", str(outside / "x.txt"))
    assert deliverables_capture(session=session, event=_stop(session)) == []
    assert not Deliverable.objects.exists()


def test_size_cap(project: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_DELIVERABLES_MAX_BYTES", "10")
    session = SessionFactory(
        root=project, project="repo", session_id="sid-1", prompt="make me a report"
    )
    (outside / "big.txt").write_bytes(b"x" * 11)
    (outside / "small.txt").write_bytes(b"x" * 10)
    _write_event(session, "Write", str(outside / "big.txt"))
    _write_event(session, "Write", str(outside / "small.txt"))
    made = deliverables_capture(session=session, event=_stop(session))
    assert [d.name for d in made] == ["small.txt"]


def test_skips_missing_dirs_symlinks_fifos_and_secrets(
    project: Path, outside: Path, tmp_path: Path
) -> None:
    session = SessionFactory(
        root=project, project="repo", session_id="sid-1", prompt="make me a report"
    )
    secret = tmp_path / "home" / ".ssh" / "id_rsa"
    secret.parent.mkdir(parents=True)
    secret.write_text("PRIVATE KEY")
    real = outside / "real.txt"
    real.write_text("a plain file, named only through a link")
    link = outside / "link.txt"
    link.symlink_to(real)
    (outside / "adir").mkdir()
    fifo = outside / "pipe"
    os.mkfifo(fifo)
    for path in (outside / "missing.txt", link, outside / "adir", fifo, secret):
        _write_event(session, "Write", str(path))
    assert deliverables_capture(session=session, event=_stop(session)) == []
    assert not Deliverable.objects.exists()


def test_files_in_the_data_dir_are_not_deliverables(project: Path, data_dir: Path) -> None:
    session = SessionFactory(
        root=project, project="repo", session_id="sid-1", prompt="make me a report"
    )
    own = data_dir / "notes.txt"
    own.write_text("cmem's own")
    _write_event(session, "Write", str(own))
    assert deliverables_capture(session=session, event=_stop(session)) == []


def test_repeated_stop_stores_once_and_new_content_is_kept_apart(
    project: Path, outside: Path
) -> None:
    session = SessionFactory(
        root=project, project="repo", session_id="sid-1", prompt="make me a report"
    )
    out = outside / "out.txt"
    out.write_text("v1")
    _write_event(session, "Write", str(out))
    first = deliverables_capture(session=session, event=_stop(session))
    again = deliverables_capture(session=session, event=_stop(session))
    assert [d.pk for d in again] == [d.pk for d in first]
    assert Deliverable.objects.count() == 1

    out.write_text("v2, longer")
    second = deliverables_capture(session=session, event=_stop(session))
    assert Deliverable.objects.count() == 2
    assert second[0].stored_path != first[0].stored_path
    assert (deliverables_root() / first[0].stored_path).read_text() == "v1"
    assert (deliverables_root() / second[0].stored_path).read_text() == "v2, longer"


def test_stop_hook_captures_through_the_api(project: Path, outside: Path) -> None:
    """The capture service calls deliverables_capture while answering Stop."""
    client = Client(enforce_csrf_checks=True)
    base = {"session_id": "hook-sid", "cwd": str(project), "transcript_path": ""}

    def post(event: str, **payload: object) -> None:
        resp = client.post(
            f"/api/hooks/claude-code/{event}",
            data=json.dumps({**base, **payload}),
            content_type="application/json",
        )
        assert resp.status_code == 200, resp.content

    post("session-init", hook_event_name="UserPromptSubmit", prompt="write the release notes")
    notes = outside / "RELEASE.md"
    notes.write_bytes(b"# Release\n")
    post(
        "observation",
        hook_event_name="PostToolUse",
        tool_name="Write",
        tool_input={"file_path": str(notes), "content": "# Release\n"},
        tool_response={"type": "create"},
        tool_use_id="tu-1",
    )
    post("summarize", hook_event_name="Stop", stop_hook_active=False, last_assistant_message="done")
    d = Deliverable.objects.get()
    assert (
        d.name == "RELEASE.md"
        and d.prompt is not None
        and d.prompt.text == "write the release notes"
    )
    assert (deliverables_root() / d.stored_path).read_bytes() == b"# Release\n"
