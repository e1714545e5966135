"""With no API key at all, captured tool uses still become useful observations and summaries."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.compression import health
from memory.compression.pipeline import compressor_mode
from memory.compression.providers import NOTHING_CONFIGURED
from memory.compression.tasks import session_events_process_task
from memory.models import Event, Observation, ObservationFile, Summary
from tests.factories import SessionFactory
from tests.fakes import (
    add_event,
    bash_payload,
    edit_payload,
    post_tool_use,
    read_payload,
    write_payload,
)

pytestmark = pytest.mark.django_db

GATE_SRC = '''"""The read gate."""


def gate_rows(project, path):
    rows = ObservationFile.objects.filter(project=project, path=path)
    rows = rows.order_by("-created")
    return rows
'''


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.anthropic/api_key either
    # Nothing listens here: a request would fail loudly instead of reaching anything real.
    monkeypatch.setenv("CLAUDE_MEM_ANTHROPIC_BASE_URL", "http://127.0.0.1:9")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "demo"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "gate.py").write_text(GATE_SRC)
    return root


def _process(session) -> list[Observation]:
    session_events_process_task(session.pk)
    return list(Observation.objects.filter(session=session).order_by("pk"))


def test_mode_is_offline_without_a_key() -> None:
    assert compressor_mode() == ("offline", NOTHING_CONFIGURED)
    assert NOTHING_CONFIGURED.startswith("no API key")


def test_key_from_data_dir_env_file_switches_to_api(data_dir: Path) -> None:
    (data_dir / ".env").write_text(
        "# cmem\nexport ANTHROPIC_API_KEY='sk-ant-from-env-file-123456'\n"
    )
    assert compressor_mode() == ("api", "")


def test_offline_setting_wins_over_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-whatever-1234567890")
    monkeypatch.setenv("CLAUDE_MEM_COMPRESSOR", "offline")
    assert compressor_mode()[0] == "offline"


def test_edit_becomes_a_useful_offline_observation(project: Path) -> None:
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    event = add_event(
        session,
        edit_payload(
            project / "memory" / "gate.py",
            project,
            '    rows = rows.order_by("-created")\n',
            '    # Rank rows by specificity\n    rows = rows.order_by("-exact", "-created")\n',
        ),
    )
    (obs,) = _process(session)
    assert obs.title == "Edited memory/gate.py: Rank rows by specificity"
    assert obs.type == "change"
    assert obs.compressor == "offline"
    assert obs.files_modified == ["memory/gate.py"] and obs.files_read == []
    assert "memory/gate.py: +2 −1 lines." in obs.facts
    assert obs.concepts == ["what-changed"]
    assert obs.input_tokens == 0
    file_row = ObservationFile.objects.get(observation=obs)
    assert (file_row.path, file_row.role) == ("memory/gate.py", "modified")
    assert file_row.content_hash == event.payload["cmem_files"][0]["sha256"]
    event.refresh_from_db()
    assert event.status == Event.Status.DONE


def test_edit_adding_a_function_is_a_feature_named_after_it(project: Path) -> None:
    session = SessionFactory(root=project, project="demo", prompt="add a helper")
    add_event(
        session,
        edit_payload(
            project / "memory" / "gate.py",
            project,
            "    return rows\n",
            "    return rows\n\n\ndef rank_rows(rows):\n    return sorted(rows)\n",
        ),
    )
    (obs,) = _process(session)
    assert obs.type == "feature"
    assert obs.title == "Edited memory/gate.py: added rank_rows()"
    assert "Symbols touched in memory/gate.py: rank_rows." in obs.facts


def test_edit_after_a_failing_command_is_a_bugfix(project: Path) -> None:
    session = SessionFactory(root=project, project="demo", prompt="make the tests green")
    add_event(
        session,
        bash_payload(
            "pytest tests/test_gate.py",
            project,
            stdout="E   AssertionError: rows not ranked\n1 failed",
            exit_code=1,
        ),
    )
    add_event(
        session,
        edit_payload(project / "memory" / "gate.py", project, '"-created"', '"-exact", "-created"'),
    )
    failing, fix = _process(session)
    assert failing.type == "discovery"
    assert failing.title == "Tests failed (pytest): E AssertionError: rows not ranked"
    assert "AssertionError: rows not ranked" in failing.title
    assert "Error: E AssertionError: rows not ranked" in failing.facts
    assert fix.type == "bugfix" and fix.concepts == ["problem-solution"]


def test_read_grep_glob_are_discoveries_with_symbols_and_matches(project: Path) -> None:
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    add_event(session, read_payload(project / "memory" / "gate.py", project))
    add_event(
        session,
        post_tool_use(
            "Grep",
            {"pattern": "def gate_", "path": str(project)},
            {
                "mode": "files_with_matches",
                "filenames": [str(project / "memory" / "gate.py")],
                "numFiles": 1,
            },
            cwd=str(project),
        ),
    )
    add_event(
        session,
        post_tool_use(
            "Glob",
            {"pattern": "**/*.md"},
            {"filenames": [], "numFiles": 0, "truncated": False},
            cwd=str(project),
        ),
    )
    read, grep, glob = _process(session)
    assert read.type == grep.type == glob.type == "discovery"
    assert read.title == "Read memory/gate.py: gate_rows"
    assert read.files_read == ["memory/gate.py"]
    assert ObservationFile.objects.get(observation=read).role == "read"
    assert grep.title == "Searched for `def gate_` in .: 1 files"
    assert "Matches: memory/gate.py" in grep.facts
    assert glob.title == "Listed `**/*.md`: 0 files" and "Nothing matched." in glob.facts


def test_write_of_a_new_file_is_a_feature(project: Path) -> None:
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    add_event(
        session,
        write_payload(
            project / "memory" / "rank.py",
            project,
            "def rank(rows):\n    return rows\n\nclass Ranker:\n    pass\n",
        ),
    )
    (obs,) = _process(session)
    assert obs.type == "feature"
    assert obs.title == "Created memory/rank.py: defines rank(), Ranker()"
    assert obs.files_modified == ["memory/rank.py"]


def test_failed_tool_and_silent_command(project: Path) -> None:
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    add_event(
        session,
        post_tool_use(
            "Read",
            {"file_path": "/nonexistent/missing.txt"},
            cwd=str(project),
            error="File does not exist.",
        ),
    )
    add_event(session, bash_payload("mkdir -p build", project))
    observations = _process(session)
    assert len(observations) == 1  # a silent mkdir teaches nothing
    assert observations[0].title == "Read of /nonexistent/missing.txt failed: File does not exist."
    assert Event.objects.filter(status=Event.Status.DONE).count() == 2


def test_codex_apply_patch_files_come_from_the_patch_headers(project: Path) -> None:
    patch = "*** Begin Patch\n*** Add File: hello.txt\n+HELLO\n*** Update File: memory/gate.py\n@@\n-    return rows\n+    return list(rows)\n*** End Patch\n"
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    add_event(
        session,
        post_tool_use(
            "apply_patch", {"command": patch}, "Exit code: 0\nOutput:\nSuccess.", cwd=str(project)
        ),
    )
    (obs,) = _process(session)
    assert obs.files_modified == ["hello.txt", "memory/gate.py"]
    assert obs.title.startswith("Edited 2 files")


def test_stop_becomes_an_offline_summary_from_prompt_and_observations(project: Path) -> None:
    session = SessionFactory(root=project, project="demo", prompt="Rank gate rows by specificity")
    add_event(session, read_payload(project / "memory" / "gate.py", project))
    add_event(
        session,
        edit_payload(project / "memory" / "gate.py", project, '"-created"', '"-exact", "-created"'),
    )
    add_event(
        session,
        {"hook_event_name": "Stop", "last_assistant_message": "Rows are now ranked."},
        kind="summary",
    )
    session_events_process_task(session.pk)
    summary = Summary.objects.get()
    assert summary.request == "Rank gate rows by specificity"
    assert "Read memory/gate.py" in summary.investigated
    assert "modified memory/gate.py" in summary.completed
    assert "Rows are now ranked." in summary.notes
    assert summary.compressor == "offline"


def test_offline_is_not_reported_as_degraded(project: Path) -> None:
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    add_event(session, read_payload(project / "memory" / "gate.py", project))
    _process(session)
    assert health.observer_health_line() == ""


def test_api_mode_without_a_key_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_COMPRESSOR", "api")
    line = health.observer_health_line()
    assert line.startswith("⚠ cmem memory is degraded") and "no Anthropic API key" in line
    assert compressor_mode()[0] == "offline"
    assert compressor_mode()[1].startswith("CLAUDE_MEM_COMPRESSOR=api but no Anthropic API key")


def test_codex_failed_command_without_exit_code_is_judged_by_its_output(project: Path) -> None:
    import json

    from tests.support import CODEX_FIXTURES

    payload = json.loads((CODEX_FIXTURES / "PostToolUse.failed_command.json").read_text())
    payload["cwd"] = str(project)
    ok = json.loads((CODEX_FIXTURES / "PostToolUse.json").read_text())
    ok["cwd"] = str(project)
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    add_event(session, payload)
    add_event(session, ok)
    failed, fine = _process(session)
    assert failed.title == "Viewed missing.txt failed: cat: missing.txt: No such file or directory"
    assert failed.type == "discovery" and "Command: cat missing.txt; exit 3" in failed.facts
    assert fine.title.startswith("Viewed file.txt")
