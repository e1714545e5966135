"""Issue 15 §2: deliverables copy only what the agent produced, and never a secret.

Each test is one attack of the adversarial review, replayed against the real capture
service (or the real hook HTTP endpoint) with $HOME pointed at a temporary folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from deliverables.models import Deliverable
from deliverables.services import deliverables_capture, deliverables_root
from memory.agents.base import HookEvent
from memory.models import Event, Session
from memory.privacy.secret_locations import HOME_SECRET_ENTRIES, refusal_reason
from tests.factories import SessionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    (folder / ".ssh").mkdir(parents=True)
    (folder / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n")
    monkeypatch.setenv("HOME", str(folder))
    return folder


@pytest.fixture
def session(tmp_path: Path) -> Session:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return SessionFactory(root=root, project="repo", session_id="sid-t", prompt="do it")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "scratch"
    folder.mkdir()
    return folder


def _event(session: Session, path: str, *, failed: bool = False) -> None:
    payload: dict[str, object] = {
        "hook_event_name": "PostToolUseFailure" if failed else "PostToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": path, "content": "x"},
    }
    if failed:
        payload["error"] = "EACCES"
    Event.objects.create(
        session=session,
        kind=Event.Kind.OBSERVATION,
        tool_name="Write",
        prompt_number=1,
        payload=payload,
    )


def _stop(session: Session, transcript: str = "") -> HookEvent:
    return HookEvent(
        platform="claude-code",
        event="summarize",
        session_id=session.session_id,
        cwd=session.cwd,
        transcript_path=transcript,
    )


def _transcript(tmp_path: Path, path: str, *, result: dict[str, object]) -> str:
    lines = [
        {"type": "user", "message": {"role": "user", "content": "write it"}},
        {
            "type": "assistant",
            "message": {
                "content": [
                    {
                        "type": "tool_use",
                        "id": "tu-9",
                        "name": "Write",
                        "input": {"file_path": path},
                    }
                ]
            },
        },
        {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "tu-9", **result}]},
        },
    ]
    out = tmp_path / "t.jsonl"
    out.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return str(out)


def test_hardlink_to_a_private_key_is_not_copied(
    home: Path, session: Session, outside: Path
) -> None:
    link = outside / "notes.txt"
    os.link(home / ".ssh" / "id_rsa", link)
    _event(session, str(link))
    assert deliverables_capture(session=session, event=_stop(session)) == []
    assert not Deliverable.objects.exists()


def test_parent_swapped_for_a_symlink_between_write_and_stop(
    home: Path, session: Session, outside: Path, tmp_path: Path
) -> None:
    written = outside / "cfg"
    written.mkdir()
    (written / "hosts.yml").write_text("mine\n")
    _event(session, str(written / "hosts.yml"))
    # Between Write and Stop, the folder becomes a link to another folder with that name.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "hosts.yml").write_text("oauth_token: gho_notyours\n")
    (written / "hosts.yml").unlink()
    written.rmdir()
    written.symlink_to(elsewhere, target_is_directory=True)
    assert deliverables_capture(session=session, event=_stop(session)) == []


def test_refused_write_of_an_existing_netrc_is_not_copied(
    home: Path, session: Session, outside: Path, tmp_path: Path
) -> None:
    (home / ".netrc").write_text("machine example.com login me password hunter22\n")
    refused = {"is_error": True, "content": "The user doesn't want to proceed with this tool use."}
    transcript = _transcript(tmp_path, str(home / ".netrc"), result=refused)
    assert deliverables_capture(session=session, event=_stop(session, transcript)) == []
    # A refused Write of an ordinary existing file is not a deliverable either.
    plain = outside / "plan.md"
    plain.write_text("# old plan\n")
    transcript = _transcript(tmp_path, str(plain), result=refused)
    assert deliverables_capture(session=session, event=_stop(session, transcript)) == []
    # ...and the same file after a Write that succeeded is.
    transcript = _transcript(tmp_path, str(plain), result={"content": "File created"})
    assert [
        d.name for d in deliverables_capture(session=session, event=_stop(session, transcript))
    ] == ["plan.md"]


def test_failed_write_naming_proc_environ_is_not_copied(
    home: Path, session: Session, outside: Path, tmp_path: Path
) -> None:
    _event(session, "/proc/self/environ", failed=True)
    failed = {"is_error": True, "content": "EACCES: permission denied"}
    transcript = _transcript(tmp_path, "/proc/self/environ", result=failed)
    assert deliverables_capture(session=session, event=_stop(session, transcript)) == []
    # Even a "successful" one: /proc is refused by the secret-location list.
    transcript = _transcript(tmp_path, "/proc/self/environ", result={"content": "ok"})
    assert deliverables_capture(session=session, event=_stop(session, transcript)) == []
    # A failed write of an ordinary file that exists is not copied either.
    existing = outside / "old.txt"
    existing.write_text("old\n")
    _event(session, str(existing), failed=True)
    assert deliverables_capture(session=session, event=_stop(session)) == []


@pytest.mark.parametrize("entry", HOME_SECRET_ENTRIES)
def test_every_secret_location_is_refused(home: Path, entry: str) -> None:
    target = home / entry / "x" if not entry.rsplit("/", 1)[-1].count(".") > 1 else home / entry
    assert refusal_reason(str(home / entry)) != ""
    assert refusal_reason(str(target)) != ""
    # Spelled through a symlink to $HOME too.
    alias = home.parent / "alias"
    if not alias.exists():
        alias.symlink_to(home, target_is_directory=True)
    assert refusal_reason(str(alias / entry)) != ""


def test_files_elsewhere_in_home_are_copied_and_redacted(
    home: Path, session: Session, client: Client
) -> None:
    """Claude Code's plan files live under $HOME: allowed, with their secrets redacted."""
    config = home / ".config" / "tool" / "settings.json"
    config.parent.mkdir(parents=True)
    secret = "Zq8rT4vLm2Xp9sWe7Yu3"
    config.write_text(json.dumps({"api_key": secret, "theme": "dark"}, indent=2))
    dot = home / ".zshrc"
    dot.write_text(f"export OPENAI_API_KEY=sk-proj-{secret}{secret}\nalias ll='ls -l'\n")
    _event(session, str(config))
    _event(session, str(dot))
    made = deliverables_capture(session=session, event=_stop(session))
    assert sorted(d.name for d in made) == [".zshrc", "settings.json"]
    for d in made:
        stored = (deliverables_root() / d.stored_path).read_text()
        assert secret not in stored and "[REDACTED:" in stored
        assert d.size == len(stored.encode())
    assert any('"theme": "dark"' in (deliverables_root() / d.stored_path).read_text() for d in made)
    body = client.get(reverse("deliverables-my-work")).content.decode()
    assert "settings.json" in body and secret not in body
    for d in made:
        for view in ("deliverables-download", "deliverables-preview"):
            if view == "deliverables-preview" and d.name == ".zshrc":
                continue  # no preview for a file without a type; the download is checked
            resp = client.get(reverse(view, args=[d.pk]))
            assert resp.status_code == 200
            assert secret not in b"".join(resp.streaming_content).decode()
