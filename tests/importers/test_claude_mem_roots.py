"""`cmem import claude-mem` infers each project's root (claude-mem stores none and keeps
absolute paths), stores project-relative paths like capture does, says which root it chose,
takes `--root PROJECT=PATH`, and the imported history reaches the read gate: the first Read
of an imported file is refused, its rows marked [unknown] (no hash was recorded)."""

from __future__ import annotations

import json
import sqlite3
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from memory.models import ObservationFile, Session
from tests.briefing.gate_helpers import decision, post_gate, reason, write_file
from tests.importers.claude_mem_db import SCHEMA

pytestmark = pytest.mark.django_db(transaction=True)
T0 = 1_793_000_000_000


def build(path: Path, files: list[str], *, project: str = "shop-api", cwd: str = "") -> Path:
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    db.execute(
        "INSERT INTO sdk_sessions (content_session_id, memory_session_id, project, user_prompt, "
        "started_at, started_at_epoch, status, prompt_counter) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        ("cc-root", "mem-root", project, "fix totals", "2026-10-26T10:00:00Z", T0, "completed", 1),
    )
    db.execute(
        "INSERT INTO observations (memory_session_id, project, type, title, subtitle, facts, "
        "narrative, concepts, files_read, files_modified, prompt_number, created_at, "
        "created_at_epoch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ("mem-root", project, "bugfix", "Checkout total ignored discounts", "s", json.dumps(["f"]),
         "n", json.dumps(["problem-solution"]), json.dumps(files[:1]), json.dumps(files[1:]), 1,
         "2026-10-26T10:05:00Z", T0 + 300_000),
    )  # fmt: skip
    db.commit()
    db.close()
    return path


def run(*args: str) -> str:
    out = StringIO()
    call_command("import", "claude-mem", *args, stdout=out)
    return out.getvalue()


def test_root_inferred_paths_relative_and_the_gate_denies_labelled_unknown(tmp_path: Path) -> None:
    root = tmp_path / "code" / "shop-api"
    total = write_file(root, "checkout/total.py", size=4000)
    money = write_file(root, "checkout/money.py", size=4000)
    db = build(tmp_path / "claude-mem.db", [str(total), str(money)])
    output = run(str(db))
    # No cwd, no git: the common prefix is checkout/, the folder named like the project wins.
    assert f"root of shop-api: {root} (folder named like the project)" in output
    session = Session.objects.get(session_id="cc-root")
    assert session.project_root == str(root)
    rows = set(ObservationFile.objects.values_list("path", "role", "content_hash"))
    assert rows == {
        ("checkout/total.py", "read", "unknown"),
        ("checkout/money.py", "modified", "unknown"),
    }
    out = post_gate(Client(), root, total, session_id="new-session-1")
    assert decision(out) == "deny"
    text = reason(out)
    assert "Checkout total ignored discounts [unknown]" in text


def test_git_work_tree_is_the_root(tmp_path: Path) -> None:
    root = tmp_path / "work" / "repo"
    (root / ".git").mkdir(parents=True)
    a = write_file(root, "pkg/deep/a.py")
    b = write_file(root, "pkg/deep/b.py")
    output = run(str(build(tmp_path / "c.db", [str(a), str(b)], project="other-name")))
    assert f"root of other-name: {root} (git work tree)" in output
    assert set(ObservationFile.objects.values_list("path", flat=True)) == {
        "pkg/deep/a.py",
        "pkg/deep/b.py",
    }


def test_root_override(tmp_path: Path) -> None:
    root = tmp_path / "elsewhere"
    a = write_file(root, "src/a.py")
    db = build(tmp_path / "c.db", [str(a), str(a)])
    output = run(str(db), "--root", f"shop-api={root}")
    assert f"root of shop-api: {root} (--root)" in output
    assert set(ObservationFile.objects.values_list("path", flat=True)) == {"src/a.py"}
