"""`cmem import codex` on real rollouts written by Codex 0.171 in the end-to-end run
(a root thread with a shell read, an apply_patch and a compaction; a sub-agent's thread),
paths rewritten to /home/dev/codex-shop."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from memory.models import Event, Prompt, Session

pytestmark = pytest.mark.django_db(transaction=True)

DATA = Path(__file__).with_name("data")


def run_import(path: Path) -> str:
    out = StringIO()
    call_command("import", "codex", str(path), stdout=out)
    return out.getvalue()


def test_rollouts_become_one_codex_session_with_its_tool_uses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_COMPRESSOR", "offline")
    report = run_import(DATA / "rollout-root.jsonl")
    assert "tool use" in report
    session = Session.objects.get()
    assert (session.platform, session.project, session.status) == (
        "codex",
        "codex-shop",
        "completed",
    )
    assert [p.text for p in Prompt.objects.all()] == [
        "E2E-CX-ONE: read handlers.py and patch handler 7"
    ]
    events = list(Event.objects.order_by("id"))
    assert [e.tool_name for e in events] == ["Bash", "apply_patch"]
    assert events[0].payload["tool_input"] == {"command": "cat handlers.py"}
    assert "handler_59" in events[0].payload["tool_response"]
    files = events[1].payload["cmem_files"]
    assert [(f["path"], f["role"], f["sha256"]) for f in files] == [("handlers.py", "modified", "")]
    assert events[0].payload["cmem_imported"] is True
    # Again: nothing new.
    run_import(DATA / "rollout-root.jsonl")
    assert Event.objects.count() == 2 and Prompt.objects.count() == 1


def test_a_subagents_rollout_adds_to_its_root_session_without_prompts(tmp_path: Path) -> None:
    run_import(DATA)
    sessions = list(Session.objects.values_list("session_id", flat=True))
    assert len(sessions) == 2  # the root of run 1 and the root the sub-agent belongs to
    assert Prompt.objects.count() == 1  # the sub-agent's task is not a user prompt
    assert not Prompt.objects.filter(text__contains="CHILD").exists()


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        run_import(tmp_path / "nope")
