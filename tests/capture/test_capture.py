"""Capture services through the real hook endpoint (Django test client, real SQLite)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from memory.models import Event, Prompt, Session
from tests.support import CLAUDE_FIXTURES

pytestmark = pytest.mark.django_db


@pytest.fixture
def hook_client() -> Client:
    return Client(enforce_csrf_checks=True)


def _fixture(name: str, **changes: Any) -> dict[str, Any]:
    data = json.loads((CLAUDE_FIXTURES / name).read_text())
    data.update(changes)
    return data


def _post(client: Client, event: str, payload: dict[str, Any] | bytes) -> Any:
    body = payload if isinstance(payload, bytes) else json.dumps(payload)
    return client.post(
        f"/api/hooks/claude-code/{event}", data=body, content_type="application/json"
    )


def test_session_init_creates_the_session_and_numbers_prompts(
    hook_client: Client, tmp_path: Path
) -> None:
    cwd = tmp_path / "demo"
    cwd.mkdir()
    for text in ("first prompt", "second prompt"):
        resp = _post(
            hook_client,
            "session-init",
            _fixture("UserPromptSubmit.json", prompt=text, cwd=str(cwd)),
        )
        assert resp.status_code == 200 and resp.json() == {}
    session = Session.objects.get()
    assert (session.platform, session.project, session.project_root, session.cwd) == (
        "claude-code",
        "demo",
        str(cwd),
        str(cwd),
    )
    assert session.transcript_path.endswith(".jsonl")
    assert list(Prompt.objects.order_by("number").values_list("number", "text")) == [
        (1, "first prompt"),
        (2, "second prompt"),
    ]


def test_private_parts_of_a_prompt_are_never_stored(hook_client: Client) -> None:
    _post(
        hook_client,
        "session-init",
        _fixture(
            "UserPromptSubmit.json",
            prompt="fix the bug <private>my home address is 1 Elm St</private> now",
        ),
    )
    assert Prompt.objects.get().text == "fix the bug  now"


def test_an_entirely_private_prompt_stores_nothing_and_its_turn_is_not_observed(
    hook_client: Client, data_dir: Path
) -> None:
    resp = _post(
        hook_client,
        "session-init",
        _fixture("UserPromptSubmit.json", prompt="<private>PRIVATE-XYZ plans</private>"),
    )
    assert resp.status_code == 200 and resp.json() == {}
    assert not Session.objects.exists() and not Prompt.objects.exists()
    # The tool use and the Stop of that same turn (same prompt_id) are dropped too.
    prompt_id = _fixture("UserPromptSubmit.json")["prompt_id"]
    _post(
        hook_client,
        "observation",
        _fixture(
            "PostToolUse.bash.json",
            session_id=_fixture("UserPromptSubmit.json")["session_id"],
            prompt_id=prompt_id,
        ),
    )
    _post(hook_client, "summarize", _fixture("Stop.json"))
    assert not Event.objects.exists()
    assert not any(b"PRIVATE-XYZ" in p.read_bytes() for p in data_dir.rglob("*") if p.is_file())


def test_internal_task_notification_prompts_are_ignored(hook_client: Client) -> None:
    _post(
        hook_client,
        "session-init",
        _fixture(
            "UserPromptSubmit.json", prompt="<task-notification><id>1</id></task-notification>"
        ),
    )
    assert not Prompt.objects.exists()


def test_observation_is_recorded_once_per_tool_use_and_enqueued_on_commit(
    hook_client: Client, django_capture_on_commit_callbacks: Any
) -> None:
    payload = _fixture("PostToolUse.bash.json")
    with django_capture_on_commit_callbacks() as callbacks:
        assert _post(hook_client, "observation", payload).json() == {}
    assert len(callbacks) == 1
    with django_capture_on_commit_callbacks() as again:
        assert _post(hook_client, "observation", payload).status_code == 200
    assert again == []
    event = Event.objects.get()
    assert (event.kind, event.tool_name, event.tool_use_id, event.status) == (
        "observation",
        "Bash",
        "toolu_fake_0002",
        "pending",
    )
    assert event.payload["tool_input"]["command"] == "echo BASH-RAN-OK"
    assert event.payload["tool_response"]["stdout"] == "BASH-RAN-OK"


def test_failed_tool_use_is_recorded_with_its_error(hook_client: Client) -> None:
    _post(hook_client, "observation", _fixture("PostToolUseFailure.json"))
    event = Event.objects.get()
    assert event.payload["error"].startswith("File does not exist.")
    assert (
        event.payload["hook_event_name"] == "PostToolUseFailure"
        and event.payload["is_interrupt"] is False
    )


def test_skipped_tools_and_excluded_projects_store_nothing(
    hook_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _post(hook_client, "observation", _fixture("PostToolUse.bash.json", tool_name="TodoWrite"))
    assert not Event.objects.exists()
    secret_project = tmp_path / "secret-client"
    secret_project.mkdir()
    monkeypatch.setenv("CLAUDE_MEM_EXCLUDED_PROJECTS", "secret-*")
    for event, name in [
        ("session-init", "UserPromptSubmit.json"),
        ("observation", "PostToolUse.bash.json"),
        ("summarize", "Stop.json"),
    ]:
        assert _post(hook_client, event, _fixture(name, cwd=str(secret_project))).status_code == 200
    assert not Session.objects.exists() and not Event.objects.exists()


def test_file_tools_record_project_relative_file_facts(hook_client: Client, tmp_path: Path) -> None:
    project = tmp_path / "demo"
    (project / ".git").mkdir(parents=True)
    target = project / "src" / "target.txt"
    target.parent.mkdir()
    target.write_text("hello\n")
    payload = _fixture("PostToolUse.json", cwd=str(project), tool_input={"file_path": str(target)})
    _post(hook_client, "observation", payload)
    edit = _fixture(
        "PostToolUse.bash.json",
        cwd=str(project),
        tool_name="Edit",
        tool_use_id="toolu_edit",
        tool_input={"file_path": str(target), "old_string": "hello", "new_string": "bye"},
        tool_response={},
    )
    _post(hook_client, "observation", edit)
    read, modified = (e.payload["cmem_files"] for e in Event.objects.order_by("pk"))
    assert read == [
        {
            "path": "src/target.txt",
            "abs": str(target),
            "role": "read",
            "size": 6,
            "mtime": target.stat().st_mtime,
            "sha256": hashlib.sha256(b"hello\n").hexdigest(),
        }
    ]
    assert modified[0]["role"] == "modified" and modified[0]["path"] == "src/target.txt"


def test_team_mode_file_facts_from_the_client_are_used(hook_client: Client, tmp_path: Path) -> None:
    facts = {"/remote/box/demo/a.py": {"size": 10, "mtime": 1.5, "sha256": "ab" * 32}}
    payload = _fixture(
        "PostToolUse.json",
        cwd="/remote/box/demo",
        tool_input={"file_path": "/remote/box/demo/a.py"},
        cmem_file_facts=facts,
    )
    _post(hook_client, "observation", payload)
    (fact,) = Event.objects.get().payload["cmem_files"]
    assert (fact["size"], fact["mtime"], fact["sha256"], fact["path"]) == (
        10,
        1.5,
        "ab" * 32,
        "a.py",
    )


def test_subagent_events_keep_their_agent(hook_client: Client) -> None:
    _post(
        hook_client,
        "observation",
        _fixture("PostToolUse.bash.json", agent_id="agent-7", agent_type="Explore"),
    )
    payload = Event.objects.get().payload
    assert (payload["agent_id"], payload["agent_type"]) == ("agent-7", "Explore")


def test_stop_queues_one_summary_and_not_on_reentry(hook_client: Client) -> None:
    _post(hook_client, "summarize", _fixture("Stop.json", stop_hook_active=True))
    assert not Event.objects.exists()
    _post(hook_client, "summarize", _fixture("Stop.json"))
    _post(hook_client, "summarize", _fixture("Stop.json"))  # the same turn delivered twice
    event = Event.objects.get()
    assert event.kind == "summary" and event.payload["last_assistant_message"].startswith(
        "FAKE-FINAL-ANSWER"
    )


def test_session_end_marks_the_session_complete_and_a_new_prompt_reopens_it(
    hook_client: Client,
) -> None:
    _post(hook_client, "session-init", _fixture("UserPromptSubmit.json"))
    _post(hook_client, "observation", _fixture("PostToolUse.json"))
    _post(hook_client, "session-end", _fixture("SessionEnd.json"))
    session = Session.objects.get()
    assert session.status == "completed" and session.ended is not None
    assert Event.objects.get().status == "pending"  # queued work still finishes
    _post(hook_client, "session-init", _fixture("UserPromptSubmit.json", prompt="resumed"))
    session.refresh_from_db()
    assert session.status == "active" and session.ended is None


def test_an_oversized_request_gets_a_clear_413(hook_client: Client, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    resp = _post(hook_client, "observation", _fixture("PostToolUse.json"))
    assert resp.status_code == 413
    assert "limit is 1,000" in resp.json()["error"]
    assert not Event.objects.exists()


def test_invalid_utf8_and_nul_bytes_are_stored_replaced(hook_client: Client) -> None:
    body = json.dumps(
        _fixture("PostToolUse.bash.json", tool_response={"stdout": "a\u0000b \ud800 c"})
    ).encode()
    body = body.replace(b"BASH-RAN-OK", b"BASH-\xff-OK")
    assert _post(hook_client, "observation", body).status_code == 200
    payload = Event.objects.get().payload
    assert payload["tool_response"]["stdout"] == "a\ufffdb \ufffd c"
    assert payload["tool_input"]["command"] == "echo BASH-\ufffd-OK"


def test_fields_are_capped_head_and_tail_with_a_marker(
    hook_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_FIELD_CAP", "300")
    output = "HEAD" + "x" * 5000 + "TAIL"
    _post(
        hook_client,
        "observation",
        _fixture("PostToolUse.bash.json", tool_response={"stdout": output}),
    )
    stored = Event.objects.get().payload["tool_response"]["stdout"]
    assert stored.startswith("HEAD") and stored.endswith("TAIL")
    assert "4,708 of 5,008 characters cut" in stored
