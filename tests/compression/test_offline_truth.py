"""The offline compressor tells the truth: Bash file changes are changes of those files,
titles name purpose and outcome (never a raw command cut mid-token), summaries come from
the turn's observations (never the prompt echoed and cut), and My Work's Done line says
what changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory.compression.offline_shell import looks_like_command
from memory.compression.shellwrites import changed_paths
from memory.compression.tasks import session_events_process_task
from memory.models import Observation, ObservationFile, Summary
from tests.bench import offline as bench
from tests.bench import offline_sources
from tests.factories import SessionFactory
from tests.fakes import add_event, bash_payload, post_tool_use
from tests.support import CLAUDE_FIXTURES, CODEX_FIXTURES

pytestmark = pytest.mark.django_db


def make_session(
    root: Path, *, prompt: str = "Make the gate rank rows by specificity", project: str = "demo"
):
    return SessionFactory(root=root, project=project, prompt=prompt)


LONG_PROMPT = (
    "Please add a TODO to inventory.py about restock alerts and then check that "
    "src/shop/inventory/alerts/restock_thresholds.py still imports cleanly after that"
)


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


@pytest.mark.parametrize(
    ("command", "paths"),
    [
        ('printf "\\n# TODO: restock\\n" >> inventory.py', ["inventory.py"]),
        ("cat > notes.md <<'EOF'\nhello > not-a-file\nEOF", ["notes.md"]),
        ("sed -i 's/a/b/' x.py y.py", ["x.py", "y.py"]),
        ("sed -i.bak -e 's/a/b/' z.py", ["z.py"]),
        ("echo x | tee -a log.md", ["log.md"]),
        ("mv a.py b.py && rm -f junk.txt", ["a.py", "b.py", "junk.txt"]),
        ("cp a.toml b.toml", ["b.toml"]),
        ("git checkout -- m.py", ["m.py"]),
        ("git restore v.py", ["v.py"]),
        ("black src/app.py", ["src/app.py"]),
        ("uv run ruff format pkg/mod.py", ["pkg/mod.py"]),
        ("npx prettier --write web/app.js", ["web/app.js"]),
        ("gofmt -w main.go", ["main.go"]),
        ("prettier --check web/app.js", []),
        ("ls > /dev/null 2>&1", []),
        ("pytest -q 2>&1 | tail -5", []),
        ("echo $X > $OUT", []),
        ("grep -rn 'a > b' src/", []),
    ],
)
def test_shell_changes_are_recognised(command: str, paths: list[str]) -> None:
    assert changed_paths(command) == paths


def test_printf_append_is_a_change_of_that_file(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    root.mkdir()
    session = make_session(root, prompt=LONG_PROMPT)
    command = 'printf "\\n# TODO: restock alerts\\nRESTOCK_AT = 5\\n" >> inventory.py'
    add_event(session, bash_payload(command, root))
    add_event(
        session, {"hook_event_name": "Stop", "last_assistant_message": "Added."}, kind="summary"
    )
    session_events_process_task(session.pk)
    obs = Observation.objects.get(session=session)
    assert obs.type == "change"
    assert obs.title == "Appended to inventory.py"
    assert obs.files_modified == ["inventory.py"]
    assert list(ObservationFile.objects.filter(observation=obs).values_list("path", "role")) == [
        ("inventory.py", "modified")
    ]
    assert f"Command: {command.splitlines()[0]}" in obs.facts
    summary = Summary.objects.get(session=session)
    # The prompt does not fit a title whole: the title is what the turn did, never the prompt cut.
    assert summary.request == "Appended to inventory.py"
    assert "No file changes" not in summary.completed
    assert "modified inventory.py" in summary.completed


def test_a_change_only_a_later_hash_shows_is_recorded(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    root.mkdir()
    session = make_session(root, prompt="regenerate the schema")

    def read(sha: str) -> dict:
        return post_tool_use(
            "Read",
            {"file_path": str(root / "schema.py")},
            {"type": "text", "file": {"filePath": str(root / "schema.py"), "content": "X = 1\n"}},
            cwd=str(root),
            files=[{"path": "schema.py", "role": "read", "sha256": sha}],
        )

    add_event(session, read("a" * 64))
    add_event(session, bash_payload("python tools/regen.py", root, stdout="regenerated"))
    add_event(session, read("b" * 64))
    session_events_process_task(session.pk)
    regen = Observation.objects.get(session=session, tool_name="Bash")
    assert regen.files_modified == ["schema.py"] and regen.type == "change"
    assert regen.title == "Changed schema.py (run it)"  # the agent's own description


def test_summary_without_changes_says_so_and_keeps_a_short_prompt(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    root.mkdir()
    session = make_session(root, prompt="how many routes are there?")
    add_event(session, bash_payload("grep -c def routes.py", root, stdout="40"))
    add_event(session, {"hook_event_name": "Stop", "last_assistant_message": "40."}, kind="summary")
    session_events_process_task(session.pk)
    summary = Summary.objects.get(session=session)
    assert summary.request == "how many routes are there?"
    assert summary.completed == "No file changes."


def test_failed_tests_then_no_fix_leave_a_next_step(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    root.mkdir()
    session = make_session(root, prompt="make the tax tests pass")
    add_event(
        session,
        bash_payload(
            "pytest -q tests/test_tax.py",
            root,
            stdout="E   AssertionError: 7 != 8\n1 failed",
            exit_code=1,
        ),
    )
    add_event(
        session, {"hook_event_name": "Stop", "last_assistant_message": "Still red."}, kind="summary"
    )
    session_events_process_task(session.pk)
    obs = Observation.objects.get(session=session)
    assert obs.title == "Tests failed (pytest): E AssertionError: 7 != 8"
    summary = Summary.objects.get(session=session)
    assert summary.next_steps == "Fix: Tests failed (pytest): E AssertionError: 7 != 8"


def test_raw_command_check_catches_the_old_titles() -> None:
    command = 'printf "\\n# TODO restock alerts and more text\\nRESTOCK = 5\\n" >> inventory.py'
    assert looks_like_command('Ran `printf "\\n# TODO restock…`: 1 file changed', command)
    assert looks_like_command("`pytest tests/test_gate.py` failed", "pytest tests/test_gate.py")
    assert not looks_like_command("Appended to inventory.py", command)
    assert not looks_like_command("Tests passed (pytest): 3 passed", "pytest -q tests/test_gate.py")


def test_bench_offline_reaches_its_targets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench, "ROOT", str(tmp_path))
    (tmp_path / "fixes").mkdir()
    (tmp_path / "fixes" / "rounding.patch").write_text("--- a/shop/cart.py\n+++ b/shop/cart.py\n")
    built = bench.evaluate(bench.built_set(), str(tmp_path))
    assert built["file_changing"] >= 18
    assert built["recorded_as_modifying"] == built["file_changing"], built["misses"]
    assert built["typed_as_change"] == built["file_changing"]
    assert built["titles_with_raw_command"] == 0, built["raw_titles"]
    assert "No file changes" not in built["done_line"]
    monkeypatch.setenv("CMEM_FIXTURES_DIR", str(CLAUDE_FIXTURES.parent))
    assert CODEX_FIXTURES.parent == CLAUDE_FIXTURES.parent
    recorded = bench.evaluate(bench.fixture_cases(), str(tmp_path))
    assert recorded["tool_uses"] >= 6
    assert recorded["recorded_as_modifying"] == recorded["file_changing"] >= 1
    assert recorded["titles_with_raw_command"] == 0, recorded["raw_titles"]


def test_bench_runs_over_what_the_e2e_tests_recorded(tmp_path: Path) -> None:
    """The sessions the real CLIs of tests/e2e, tests/codex/e2e and tests/agents/e2e sent,
    recorded by tests/support/e2e_record.py into tests/bench/data/e2e-recorded/, are
    part of `python -m tests.bench offline` and meet its targets."""
    payloads = offline_sources.e2e_payloads()
    agents = {name.rsplit("-", 1)[0] for name in payloads.sets}
    assert {"claude-code", "codex", "copilot-cli", "gemini-cli", "opencode"} <= agents
    assert payloads.unlabelled == []
    result = bench.evaluate_source(payloads, str(tmp_path))
    # Claude Code's Edit, Write, `| tee answer.txt` and second Edit; Codex's apply_patch.
    assert result["file_changing"] >= 5
    assert result["recorded_as_modifying"] == result["file_changing"], result["misses"]
    assert result["typed_as_change"] == result["file_changing"]
    assert result["titles_with_raw_command"] == 0, result["raw_titles"]
    transcripts = offline_sources.e2e_transcripts()
    assert any(s.startswith("claude-code-") for s in transcripts.sets)
    assert any(s.startswith("codex-") for s in transcripts.sets)
    from_transcripts = bench.evaluate_source(transcripts, str(tmp_path))
    assert from_transcripts["file_changing"] >= 5
    assert from_transcripts["recorded_as_modifying"] == from_transcripts["file_changing"]
    assert from_transcripts["titles_with_raw_command"] == 0, from_transcripts["raw_titles"]
    names = [name for name, _ in bench.results()]
    assert names == [
        "shared fixture payloads",
        "shared fixture transcripts",
        "e2e payloads",
        "e2e transcripts",
        "built set",
    ]


def test_an_unlabelled_recorded_shell_command_is_reported_not_guessed(tmp_path: Path) -> None:
    folder = tmp_path / "agent-1.0"
    folder.mkdir()
    (tmp_path / "labels.json").write_text('{"shell": {"ls": []}}')
    event = {
        "kind": "observation",
        "session_id": "s1",
        "tool_name": "Bash",
        "payload": {"tool_name": "Bash", "tool_input": {"command": "make regen"}, "cwd": "/p"},
    }
    (folder / "events.jsonl").write_text(json.dumps(event) + "\n")
    source = offline_sources.e2e_payloads(tmp_path)
    assert source.sets == ["agent-1.0"]
    assert len(source.unlabelled) == 1 and "make regen" in source.unlabelled[0]
