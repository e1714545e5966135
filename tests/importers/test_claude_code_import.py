from __future__ import annotations

import json
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from memory.models import Event, Observation, Prompt, Session
from tests.support import CLAUDE_FIXTURES

pytestmark = pytest.mark.django_db(transaction=True)

TOOLS = Path(__file__).with_name("fixtures") / "transcript.tools.jsonl"


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    """A fake ~/.claude/projects with the two real transcripts from Claude Code 2.1.332."""
    root = tmp_path / "claude-projects"
    (root / "-home-dev-projects-demo").mkdir(parents=True)
    (root / "-tmp-e2eprobe-proj").mkdir(parents=True)
    shutil.copy(
        CLAUDE_FIXTURES / "transcript.basic.jsonl",
        root / "-home-dev-projects-demo" / "571a3c56-e5f8-4a93-b71d-946a0601887f.jsonl",
    )
    shutil.copy(TOOLS, root / "-tmp-e2eprobe-proj" / "1d540c57-8560-45c3-a18f-0ceacb439f0a.jsonl")
    return root


def run_import(*args: str) -> str:
    out = StringIO()
    call_command("import", "claude-code", *args, stdout=out)
    return out.getvalue()


def test_imports_sessions_prompts_and_tool_uses(projects: Path) -> None:
    output = run_import(str(projects))

    sessions = {s.session_id: s for s in Session.objects.all()}
    assert set(sessions) == {
        "571a3c56-e5f8-4a93-b71d-946a0601887f",
        "1d540c57-8560-45c3-a18f-0ceacb439f0a",
    }
    probe = sessions["1d540c57-8560-45c3-a18f-0ceacb439f0a"]
    assert probe.project == "proj"
    assert probe.started.isoformat().startswith("2026-11-30T12:36")
    assert [p.text for p in Prompt.objects.filter(session=probe)] == ["PROBE please edit"]
    events = list(Event.objects.filter(session=probe).order_by("created"))
    assert [e.tool_name for e in events] == ["Read", "Edit", "Bash", "Write"]
    assert all(e.kind == Event.Kind.OBSERVATION and e.prompt_number == 1 for e in events)
    bash = events[2].payload
    assert bash["hook_event_name"] == "PostToolUse"
    assert bash["tool_input"]["command"] == "python3 -c 'print(42)'"
    assert bash["tool_response"]["stdout"] == "42"
    edit = events[1].payload
    # The same payload shape live capture stores; the file's hash today is not the one it had then.
    assert edit["cmem_files"] == [
        {
            "path": "target.py",
            "abs": "/tmp/e2eprobe/proj/target.py",
            "role": "modified",
            "size": None,
            "mtime": None,
            "sha256": "",
        }
    ]
    assert edit["cmem_imported"] is True
    # Queued for compression like live capture (huey runs inline in tests).
    assert Event.objects.filter(session=probe, status="done").count() == 4
    assert Observation.objects.filter(session=probe).exists()
    assert "session        imported      2" in output
    assert "tool use       imported      5" in output


def test_second_import_adds_nothing(projects: Path) -> None:
    run_import(str(projects))
    counts = (Session.objects.count(), Prompt.objects.count(), Event.objects.count())
    output = run_import(str(projects))
    assert (Session.objects.count(), Prompt.objects.count(), Event.objects.count()) == counts
    assert "session        imported      0   skipped      2" in output
    assert "tool use       imported      0   skipped      5" in output


def test_tolerates_truncated_and_unknown_lines(tmp_path: Path) -> None:
    lines = TOOLS.read_text().splitlines()
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text(
        "\n".join(
            [
                json.dumps({"type": "from-the-future", "x": 1}),
                "[1, 2]",
                *lines[:-3],
                lines[-3][: len(lines[-3]) // 2],
            ]
        )
    )
    output = run_import(str(damaged))
    assert Session.objects.count() == 1
    assert Event.objects.count() == 4
    assert "unreadable or unknown entries skipped" in output


def test_since_and_project_filters(projects: Path) -> None:
    run_import(str(projects), "--project", "demo")
    assert list(Session.objects.values_list("project", flat=True)) == ["demo"]
    run_import(str(projects), "--since", "2027-01-01")
    assert Session.objects.count() == 1


def test_private_tags_and_secrets_are_kept_out(tmp_path: Path) -> None:
    lines = [json.loads(line) for line in TOOLS.read_text().splitlines()]
    for entry in lines:
        if entry.get("type") == "user" and entry["message"]["content"] == "PROBE please edit":
            entry["message"]["content"] = (
                "PROBE <private>my home address</private> with key sk-ant-api03-" + "a" * 40
            )
        if (
            entry.get("type") == "user"
            and isinstance(entry.get("toolUseResult"), dict)
            and "stdout" in entry["toolUseResult"]
        ):
            entry["toolUseResult"]["stdout"] = "AWS_SECRET=AKIAIOSFODNN7EXAMPLE"
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in lines))
    run_import(str(path))
    prompt = Prompt.objects.get()
    assert "home address" not in prompt.text and "aaaaaaaa" not in prompt.text
    bash = Event.objects.get(tool_name="Bash")
    assert "AKIAIOSFODNN7EXAMPLE" not in json.dumps(bash.payload)


def test_a_private_prompt_drops_its_turn(tmp_path: Path) -> None:
    lines = [json.loads(line) for line in TOOLS.read_text().splitlines()]
    for entry in lines:
        if entry.get("type") == "user" and entry["message"]["content"] == "PROBE please edit":
            entry["message"]["content"] = "<private>do not remember this turn</private>"
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in lines))
    run_import(str(path))
    assert Prompt.objects.count() == 0
    assert Event.objects.count() == 0


def test_failed_tool_use_becomes_a_failure_payload(tmp_path: Path) -> None:
    entries = [
        {
            "type": "user",
            "sessionId": "s-fail",
            "cwd": str(tmp_path),
            "timestamp": "2026-11-01T10:00:00Z",
            "message": {"role": "user", "content": "run it"},
        },
        {
            "type": "assistant",
            "sessionId": "s-fail",
            "cwd": str(tmp_path),
            "timestamp": "2026-11-01T10:00:01Z",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_x",
                        "name": "Bash",
                        "input": {"command": "false"},
                    }
                ],
            },
        },
        {
            "type": "user",
            "sessionId": "s-fail",
            "cwd": str(tmp_path),
            "timestamp": "2026-11-01T10:00:02Z",
            "toolUseResult": "Error: Exit code 1",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_x",
                        "is_error": True,
                        "content": "Exit code 1",
                    }
                ],
            },
        },
        {
            "type": "assistant",
            "sessionId": "s-fail",
            "cwd": str(tmp_path),
            "timestamp": "2026-11-01T10:00:03Z",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_never",
                        "name": "Read",
                        "input": {"file_path": "/x"},
                    }
                ],
            },
        },
    ]
    path = tmp_path / "f.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in entries))
    run_import(str(path))
    event = Event.objects.get()
    assert event.payload["hook_event_name"] == "PostToolUseFailure"
    assert event.payload["error"] == "Exit code 1"


def test_a_session_captured_live_gains_nothing(tmp_path: Path) -> None:
    from memory.agents import claude_code
    from memory.capture import ingest as capture

    lines = [json.loads(line) for line in TOOLS.read_text().splitlines()]
    base = {
        "session_id": "1d540c57-8560-45c3-a18f-0ceacb439f0a",
        "cwd": "/tmp/e2eprobe/proj",
        "transcript_path": str(TOOLS),
    }
    capture.session_init(
        event=claude_code.parse("session-init", {**base, "prompt": "PROBE please edit"})
    )
    for entry in lines:
        for block in (
            entry.get("message", {}).get("content", []) if entry.get("type") == "assistant" else []
        ):
            if isinstance(block, dict) and block.get("type") == "tool_use":
                hook = {
                    **base,
                    "tool_name": block["name"],
                    "tool_input": block["input"],
                    "tool_use_id": block["id"],
                    "tool_response": {},
                }
                capture.observation_record(event=claude_code.parse("observation", hook))
    counts = (Prompt.objects.count(), Event.objects.count())
    assert counts == (1, 4)
    output = run_import(str(TOOLS))
    assert (Prompt.objects.count(), Event.objects.count()) == counts
    assert "tool use       imported      0   skipped      4" in output
