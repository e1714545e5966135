"""Issue 15 §4: the gate counts a file for an observation only on the evidence of captured
tool uses; hashless files are [unknown]; imported history gates a Read, labelled unknown."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from memory.briefing.gate import UNKNOWN_HASH, UNKNOWN_MARK
from memory.compression.tasks import events_sweep
from memory.models import Observation, ObservationFile
from tests.briefing.gate_helpers import (
    decision,
    make_obs,
    make_project,
    post_gate,
    reason,
    write_file,
)
from tests.compression.test_tasks import KEY
from tests.factories import SessionFactory
from tests.fakes import add_event, bash_payload
from tests.fakes.anthropic import FakeAnthropic, Reply
from tests.importers.claude_mem_db import build_claude_mem_db


def _claims_a_file_it_never_saw(body: dict[str, Any]) -> Reply:
    return Reply(
        text='<observation uses="1"><type>discovery</type><title>Looked around</title>'
        "<narrative>ran tool-1</narrative><files_read><file>src/never_seen.py</file></files_read>"
        "<concepts><concept>how-it-works</concept></concepts></observation>"
    )


@pytest.mark.django_db
def test_a_file_the_model_lists_but_no_tool_use_touched_does_not_gate(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_project(tmp_path)
    target = write_file(root, "src/never_seen.py")
    with FakeAnthropic(default=Reply(fn=_claims_a_file_it_never_saw)) as fake:
        monkeypatch.setenv("CLAUDE_MEM_ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        session = SessionFactory(root=root, project=root.name, prompt="look around")
        add_event(session, bash_payload("echo tool-1", root, stdout="x"))
        events_sweep(pending_older_than_seconds=0)
    obs = Observation.objects.get()
    assert obs.files_read == ["src/never_seen.py"]  # kept as the model's text
    assert not ObservationFile.objects.filter(path="src/never_seen.py").exists()
    assert decision(post_gate(client, root, target, session_id="next")) == "pass"


@pytest.mark.django_db
def test_a_file_without_a_hash_is_unknown_not_unchanged(client: Any, tmp_path: Path) -> None:
    root = make_project(tmp_path)
    target = write_file(root, "src/worker.py")
    past = datetime.now(UTC) - timedelta(days=2)
    os.utime(target, (past.timestamp(), past.timestamp()))  # untouched since
    make_obs(
        SessionFactory(root=root, session_id="s1"), "Hashless read", "src/worker.py",
        created=past + timedelta(hours=1),
    )  # fmt: skip
    out = post_gate(client, root, target, session_id="x")
    assert decision(out) == "deny"
    text = reason(out)
    assert "Hashless read [unknown]" in text and "[unchanged]" not in text.split("\n\n", 1)[1]
    assert UNKNOWN_MARK.strip() in text


@pytest.mark.django_db(transaction=True)
def test_imported_claude_mem_files_gate_the_first_read_labelled_unknown(
    client: Any, tmp_path: Path
) -> None:
    db = build_claude_mem_db(tmp_path / "claude-mem.db")
    call_command("import", "claude-mem", str(db), stdout=StringIO())
    root = make_project(tmp_path, "shop-api")
    target = write_file(root, "checkout/total.py")
    imported = ObservationFile.objects.filter(path="checkout/total.py").order_by("created").first()
    assert imported is not None and imported.content_hash == UNKNOWN_HASH  # claude-mem kept no hash
    old = imported.created - timedelta(days=1)
    os.utime(target, (old.timestamp(), old.timestamp()))
    out = post_gate(client, root, target, session_id="fresh")
    assert decision(out) == "deny"
    assert "Checkout total ignored discounts [unknown]" in reason(out)
