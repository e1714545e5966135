"""The Codex adapter on every captured Codex 0.171 payload, through the real endpoint
(`POST /api/hooks/codex/<event>`), real SQLite and the offline compressor. Every answer is
checked against Codex's strict output rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from memory.agents import codex
from memory.agents.base import GateDecision, HookInputError, HookResult
from memory.models import Event, LedgerEntry, Observation, ObservationFile, Prompt, Session
from tests.codex.strict_output import strict_errors
from tests.support import CLAUDE_FIXTURES, CODEX_FIXTURES
from tests.support.huey_tasks import delayed_tasks_run

pytestmark = pytest.mark.django_db(transaction=True)

INDEX = "recent context"
CMEM_EVENT = {name: event for event, name in codex.HOOK_EVENT_NAMES.items()}
BIG = "".join(
    f"line {i} of file.txt, long enough to pass the gate's size floor\n" for i in range(80)
)


def fixture(name: str) -> dict[str, Any]:
    return json.loads((CODEX_FIXTURES / name).read_text())


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CLAUDE_MEM_COMPRESSOR", "offline")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "file.txt").write_text(BIG)
    return root


class Hooks:
    """Posts fixture payloads as Codex would, moved into the test's project and rollouts."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.client = Client()
        self.sessions = root.parent / "sessions"
        self.sessions.mkdir(exist_ok=True)

    def payload(self, name: str, **changes: Any) -> dict[str, Any]:
        data = fixture(name)
        data["cwd"] = str(self.root)
        for key in ("transcript_path", "agent_transcript_path"):
            if key in data:
                data[key] = str(self.sessions / Path(data[key]).name)
        data.update(changes)
        return data

    def post(self, name: str, **changes: Any) -> dict[str, Any]:
        data = self.payload(name, **changes)
        event = data["hook_event_name"]
        resp = self.client.post(
            f"/api/hooks/codex/{CMEM_EVENT[event]}",
            data=json.dumps(data),
            content_type="application/json",
        )
        assert resp.status_code == 200, resp.content
        # The compression capture scheduled after its commit runs now, as if its delay passed.
        delayed_tasks_run()
        answer = resp.json()
        assert strict_errors(event, answer) == [], (name, answer)
        return answer


def context_of(answer: dict[str, Any]) -> str:
    return str((answer.get("hookSpecificOutput") or {}).get("additionalContext") or "")


@pytest.fixture
def hooks(project: Path) -> Hooks:
    return Hooks(project)


def observe_patch(hooks: Hooks) -> None:
    """A stored, compressed observation that modified file.txt (apply_patch)."""
    hooks.post("UserPromptSubmit.json")
    hooks.post(
        "PostToolUse.apply_patch.json", session_id=fixture("UserPromptSubmit.json")["session_id"]
    )
    assert ObservationFile.objects.filter(path="file.txt", role="modified").exists()


# --- the validator itself follows the observed table ----------------------------------------


def test_strict_rules_match_the_observed_table() -> None:
    table = json.loads((CODEX_FIXTURES / "output_validation.table.json").read_text())
    for case, verdicts in table.items():
        key, _, raw = case.partition("=")
        value = json.loads(raw)
        for event, accepted in verdicts.items():
            assert (strict_errors(event, {key: value}) == []) is accepted, (case, event)
    deny = json.loads((CODEX_FIXTURES / "PreToolUse.output.deny.json").read_text())
    assert strict_errors("PreToolUse", deny) == []
    assert strict_errors("PostToolUse", {"hookSpecificOutput": {"additionalContext": "x"}})


def test_render_is_strict_for_every_event_and_result() -> None:
    results = [
        HookResult(),
        HookResult(context="ctx", system_message="note"),
        HookResult(gate=GateDecision(decision="deny", reason="no")),
        HookResult(gate=GateDecision(decision="allow", context="timeline")),
        HookResult(context="x" * 30_000),
    ]
    for cmem_event, name in codex.HOOK_EVENT_NAMES.items():
        event = codex.parse(cmem_event, {"session_id": "s", "hook_event_name": name})
        for result in results:
            assert strict_errors(name, codex.render(event, result)) == [], (name, result)
    quiet = codex.parse("summarize", {"session_id": "s"})
    assert codex.render(quiet, HookResult(context="ignored", system_message="ignored")) == {}


def test_parse_rejects_unknown_events_and_bad_payloads() -> None:
    with pytest.raises(HookInputError):
        codex.parse("PreCompact", fixture("PreCompact.json"))
    with pytest.raises(HookInputError):
        codex.parse("observation", {"cwd": "/x"})
    with pytest.raises(HookInputError):
        codex.parse("observation", {"session_id": "s", "tool_input": "cat x"})
    for name in ("Interrupt.json", "PreCompact.json", "SubagentStop.json"):
        # Events cmem does not install still parse under a Codex-only event of the same shape.
        assert codex.parse("compaction", fixture(name)).session_id


# --- SessionStart ---------------------------------------------------------------------------


def test_session_start_startup_and_compact_inject_the_index(hooks: Hooks) -> None:
    assert INDEX in context_of(hooks.post("SessionStart.json"))
    assert INDEX in context_of(hooks.post("SessionStart.compact.json"))
    assert LedgerEntry.objects.filter(kind=LedgerEntry.Kind.INJECTION).count() == 2
    assert set(Session.objects.values_list("platform", flat=True)) == {"codex"}


@pytest.mark.parametrize("name", ["SessionStart.resume.json", "SessionStart.fork.json"])
def test_session_start_resume_and_fork_get_nothing(hooks: Hooks, name: str) -> None:
    assert hooks.post(name) == {}


# --- capture ---------------------------------------------------------------------------------


def test_prompt_is_stored_but_a_subagents_task_is_not(hooks: Hooks) -> None:
    assert hooks.post("UserPromptSubmit.json") == {}
    assert hooks.post("UserPromptSubmit.subagent.json") == {}
    assert list(Prompt.objects.values_list("text", "session__platform")) == [
        ("Please run cat file.txt", "codex")
    ]


def test_bash_observation_keeps_command_output_and_read_file(hooks: Hooks) -> None:
    assert hooks.post("PostToolUse.json") == {}
    event = Event.objects.get(kind=Event.Kind.OBSERVATION)
    assert event.tool_name == "Bash"
    assert event.payload["tool_input"] == {"command": "cat file.txt"}
    assert "hello from file.txt" in event.payload["tool_response"]
    assert [(f["path"], f["role"]) for f in event.payload["cmem_files"]] == [("file.txt", "read")]
    assert Observation.objects.filter(session=event.session).exists()


def test_failed_command_is_still_observed(hooks: Hooks) -> None:
    assert hooks.post("PostToolUse.failed_command.json") == {}
    event = Event.objects.get()
    assert "No such file" in event.payload["tool_response"]
    assert event.payload["cmem_files"] == []  # `cat x; exit 3` is not a plain read


def test_apply_patch_files_come_from_the_patch_headers(hooks: Hooks) -> None:
    (hooks.root / "hello.txt").write_text("HELLO-PATCH\n")
    hooks.post("PostToolUse.apply_patch.json")
    files = Event.objects.get().payload["cmem_files"]
    assert [(f["path"], f["role"]) for f in files] == [
        ("hello.txt", "modified"),
        ("file.txt", "modified"),
    ]
    assert all(f["sha256"] for f in files)
    assert set(ObservationFile.objects.filter(role="modified").values_list("path", flat=True)) >= {
        "file.txt"
    }


def test_patch_files_parses_add_update_delete_and_move() -> None:
    patch = (
        "*** Begin Patch\n*** Add File: a.py\n+x\n*** Update File: b.py\n*** Move to: c.py\n@@\n-y\n+z\n"
        "*** Delete File: d.py\n*** Update File: a.py\n*** End Patch\n"
    )
    assert codex.patch_files(patch) == ["a.py", "b.py", "c.py", "d.py"]


def test_spawn_agent_is_observed(hooks: Hooks) -> None:
    hooks.post(
        "PostToolUse.json",
        tool_name="spawn_agent",
        tool_input={"message": "CHILD-TASK"},
        tool_response='{"agent_id":"a1"}',
        tool_use_id="call_spawn",
    )
    assert Event.objects.get().tool_name == "spawn_agent"


def test_stop_queues_a_summary_once_per_turn_and_session_end_closes(hooks: Hooks) -> None:
    hooks.post("UserPromptSubmit.json")
    assert hooks.post("Stop.json") == {}
    assert hooks.post("Stop.json") == {}  # delivered twice (spool replay): one summary
    assert hooks.post("Stop.stop_hook_active_true.json") == {}
    assert Event.objects.filter(kind=Event.Kind.SUMMARY).count() == 1
    assert hooks.post("SessionEnd.json") == {}
    assert Session.objects.get().status == Session.Status.COMPLETED


# --- shell reads through the gate -------------------------------------------------------------


def test_shell_read_of_an_unknown_file_passes(hooks: Hooks) -> None:
    assert hooks.post("PreToolUse.json") == {}


def test_shell_read_of_an_observed_file_gets_its_timeline(hooks: Hooks) -> None:
    observe_patch(hooks)
    answer = hooks.post("PreToolUse.json")
    assert answer["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    assert "permissionDecision" not in answer["hookSpecificOutput"]
    assert "This file has prior observations" in context_of(answer)
    assert "the command's output is the current file" in context_of(answer)
    assert "Read the file again" not in context_of(answer)
    complex_command = {"command": "cat file.txt | grep line"}
    assert hooks.post("PreToolUse.json", tool_input=complex_command) == {}


def test_shell_read_gate_can_be_off_or_deny(hooks: Hooks, monkeypatch: pytest.MonkeyPatch) -> None:
    observe_patch(hooks)
    monkeypatch.setenv("CLAUDE_MEM_CODEX_SHELL_READ_GATE", "off")
    assert hooks.post("PreToolUse.json") == {}
    monkeypatch.setenv("CLAUDE_MEM_CODEX_SHELL_READ_GATE", "deny")
    denied = hooks.post("PreToolUse.json")["hookSpecificOutput"]
    assert denied["permissionDecision"] == "deny"
    reason = denied["permissionDecisionReason"]
    assert "Read blocked" in reason
    # In Codex's terms: no Read tool to call again, no offset/limit past the gate.
    assert "Run the same command again: a second read passes" in reason, reason
    assert "second Read" not in reason and "offset/limit" not in reason, reason
    assert hooks.post("PreToolUse.json") == {}  # asked again: passes, like a second Read


# --- compaction and sub-agents ------------------------------------------------------------------


def test_post_compact_marks_the_thread_for_its_next_tool_use_once(hooks: Hooks) -> None:
    sid = fixture("PostCompact.json")["session_id"]
    assert hooks.post("PostCompact.json") == {}
    first = hooks.post("PostToolUse.json", session_id=sid, tool_use_id="c1")
    assert INDEX in context_of(first)
    assert hooks.post("PostToolUse.json", session_id=sid, tool_use_id="c2") == {}


def test_session_start_compact_clears_the_mark(hooks: Hooks) -> None:
    sid = fixture("PostCompact.json")["session_id"]
    hooks.post("PostCompact.json")
    assert INDEX in context_of(hooks.post("SessionStart.compact.json"))
    assert hooks.post("PostToolUse.json", session_id=sid, tool_use_id="c1") == {}


def test_a_subagents_compaction_marks_only_its_thread(hooks: Hooks) -> None:
    sid = fixture("PostCompact.json")["session_id"]
    hooks.post("PostCompact.json", agent_id="child-1")
    assert hooks.post("PostToolUse.json", session_id=sid, tool_use_id="root") == {}
    child = hooks.post("PostToolUse.json", session_id=sid, agent_id="child-1", tool_use_id="kid")
    assert INDEX in context_of(child)


def _rollout(hooks: Hooks, meta_fixture: str) -> None:
    meta = fixture(meta_fixture)
    path = Path(hooks.payload("SubagentStart.json")["transcript_path"])
    path.write_text(
        json.dumps(meta) + "\n" + json.dumps({"type": "event_msg", "payload": {}}) + "\n"
    )


def test_subagent_start_gives_a_spawned_agent_the_index(hooks: Hooks) -> None:
    _rollout(hooks, "rollout.child.first_line.session_meta.json")
    assert INDEX in context_of(hooks.post("SubagentStart.json"))


def test_subagent_start_skips_a_fork(hooks: Hooks) -> None:
    _rollout(hooks, "rollout.fork.first_line.session_meta.json")
    assert hooks.post("SubagentStart.json") == {}


def test_subagent_without_a_readable_rollout_gets_the_index(hooks: Hooks) -> None:
    assert INDEX in context_of(hooks.post("SubagentStart.json"))
    Path(hooks.payload("SubagentStart.json")["transcript_path"]).write_text("not json\n")
    assert INDEX in context_of(hooks.post("SubagentStart.json"))


def test_excluded_project_gets_nothing(hooks: Hooks, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_EXCLUDED_PROJECTS", str(hooks.root))
    for name in (
        "SessionStart.json",
        "SubagentStart.json",
        "UserPromptSubmit.json",
        "PostToolUse.json",
    ):
        assert hooks.post(name) == {}
    hooks.post("PostCompact.json")
    assert (
        hooks.post("PostToolUse.json", session_id=fixture("PostCompact.json")["session_id"]) == {}
    )
    assert not Session.objects.exists()


# --- one memory for both agents -----------------------------------------------------------------


def test_claude_code_and_codex_share_one_timeline(hooks: Hooks) -> None:
    claude = json.loads((CLAUDE_FIXTURES / "PostToolUse.json").read_text())
    claude.update(cwd=str(hooks.root), tool_name="Edit", tool_use_id="toolu_x")
    claude["tool_input"] = {
        "file_path": str(hooks.root / "file.txt"),
        "old_string": "line 1",
        "new_string": "line one",
    }
    resp = hooks.client.post(
        "/api/hooks/claude-code/observation",
        data=json.dumps(claude),
        content_type="application/json",
    )
    assert resp.status_code == 200
    delayed_tasks_run()
    claude_obs = Observation.objects.get()
    index = context_of(hooks.post("SessionStart.json"))
    assert claude_obs.title in index
    assert set(Session.objects.values_list("platform", "project")) == {
        ("claude-code", "proj"),
        ("codex", "proj"),
    }


# --- the spool: a down worker loses no Codex event ----------------------------------------------


def test_spooled_codex_events_are_ingested_in_order(hooks: Hooks) -> None:
    from memory.hookclient import client as hookclient
    from memory.hooks.spool import spool_ingest

    for name, event in [
        ("UserPromptSubmit.json", "session-init"),
        ("PostToolUse.json", "observation"),
        ("Stop.json", "summarize"),
        ("SessionEnd.json", "session-end"),
    ]:
        hookclient.spool_write("codex", event, json.dumps(hooks.payload(name)).encode())
    report = spool_ingest()
    assert (report.ingested, report.failed) == (4, 0)
    session = Session.objects.get()
    assert (session.platform, session.status) == ("codex", Session.Status.COMPLETED)
    assert sorted(session.events.values_list("kind", flat=True)) == ["observation", "summary"]
    assert session.prompts.count() == 1


def test_timeline_shows_and_filters_the_agent(hooks: Hooks, admin_client: Client) -> None:
    from django.urls import reverse

    hooks.post("UserPromptSubmit.json", prompt="CODEX-PROMPT")
    claude = json.loads((CLAUDE_FIXTURES / "UserPromptSubmit.json").read_text())
    claude.update(cwd=str(hooks.root), prompt="CLAUDE-PROMPT")
    hooks.client.post(
        "/api/hooks/claude-code/session-init",
        data=json.dumps(claude),
        content_type="application/json",
    )
    url = reverse("memory-timeline")
    both = admin_client.get(url).content.decode()
    assert "CODEX-PROMPT" in both and "CLAUDE-PROMPT" in both
    only = admin_client.get(url, {"platform": "codex"}).content.decode()
    assert "CODEX-PROMPT" in only and "CLAUDE-PROMPT" not in only
    assert ">codex<" in only


def test_every_gate_text_reads_in_codexs_terms() -> None:
    """Each refusal and advice template, as Codex shows it: nothing tells the model to call
    a Read tool or to pass the gate with a line range (a shell read is gated whole)."""
    from memory.agents.codex import shell_words
    from memory.briefing import gate, refusal

    for template in (
        refusal.CHOICES,
        refusal.CHOICES_WITH_OUTLINE,
        gate.CONTEXT_INTRO,
        gate.REREAD,
    ):
        text = shell_words(template)
        assert "Read the file again" not in text and "offset/limit" not in text, text
        assert "a second Read" not in text and "the Read result" not in text, text
