"""The read gate on a file with a long history (issue 33): the decision reads a bounded,
indexed slice (the file's newest rows and its newest edits), however many rows the file has."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import time_machine
from django.db import connection

from memory.briefing import gate
from memory.models import Observation, ObservationFile, Session
from tests.briefing.gate_helpers import make_obs, make_project, post_gate, reason, sha, write_file
from tests.factories import SessionFactory

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 4, 7, 22, 25, tzinfo=UTC)
REL = "src/hot.py"


@pytest.fixture(autouse=True)
def gate_deny(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_READ_GATE", "deny")


def ids(text: str) -> list[int]:
    return [int(line.split()[0]) for line in text.splitlines() if re.match(r"^\d+ ", line)]


def broad_reads(root: Path, count: int, digest: str, newest: datetime) -> list[int]:
    """`count` observations of one session that read the file among 12 (score 0), one a
    minute back from `newest`, written in bulk as an import would."""
    session = SessionFactory(root=root, session_id="reads")
    others = [f"other/{i}.py" for i in range(11)]
    made = Observation.objects.bulk_create(
        Observation(
            session=session,
            project=session.project,
            type="discovery",
            title=f"survey {i}",
            files_read=[REL, *others],
            created=newest - timedelta(minutes=i),
        )
        for i in range(count)
    )
    ObservationFile.objects.bulk_create(
        ObservationFile(
            observation=obs,
            project=session.project,
            path=REL,
            role="read",
            content_hash=digest,
            created=obs.created,
        )
        for obs in made
    )
    return [obs.pk for obs in made]


@time_machine.travel(NOW, tick=False)
def test_a_long_history_still_puts_its_old_focused_edit_first(client, tmp_path) -> None:
    root = make_project(tmp_path)
    target = write_file(root, REL)
    digest = sha(target)
    edit = make_obs(
        SessionFactory(root=root, session_id="edit"),
        "Rewrote the hot path",
        REL,
        created=NOW - timedelta(days=30),
        role="modified",
        content_hash=digest,
    )
    reads = broad_reads(root, gate.GATE_NEWEST_ROWS * 3, digest, NOW - timedelta(days=1))
    shown = ids(reason(post_gate(client, root, target)))
    # The edit is older than the whole newest slice, yet shown (under its own day, after the
    # reads' one session, named by its newest row): without the edits' slice it would not be.
    assert shown == [reads[0], edit.pk]


@time_machine.travel(NOW, tick=False)
def test_an_old_focused_read_beyond_the_slice_is_not_read(client, tmp_path) -> None:
    """The bound is real: a read older than the newest GATE_NEWEST_ROWS rows is not part of
    the decision (an edit would be, through its own slice)."""
    root = make_project(tmp_path)
    target = write_file(root, REL)
    digest = sha(target)
    old = make_obs(
        SessionFactory(root=root, session_id="old"),
        "Read it closely",
        REL,
        created=NOW - timedelta(days=30),
        content_hash=digest,
    )
    reads = broad_reads(root, gate.GATE_NEWEST_ROWS, digest, NOW - timedelta(days=1))
    assert ids(reason(post_gate(client, root, target))) == [reads[0]]
    # One row fewer and the whole history fits the slice: the focused read is shown too.
    Observation.objects.filter(pk=reads[-1]).delete()
    shown = ids(reason(post_gate(client, root, target, session_id="another")))
    assert shown == [reads[0], old.pk]


def test_the_file_page_and_the_api_still_read_the_wider_history(tmp_path) -> None:
    root = make_project(tmp_path)
    write_file(root, REL)
    broad_reads(root, gate.GATE_NEWEST_ROWS * 2, "", NOW)
    project = Session.objects.get(session_id="reads").project
    assert len(gate.file_candidates(project=project, rel_path=REL)) == gate.GATE_NEWEST_ROWS * 2
    bounded = gate.file_candidates(project=project, rel_path=REL, bounded=True)
    assert len(bounded) == gate.GATE_NEWEST_ROWS


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's query plan")
@pytest.mark.parametrize("role", ["", "modified"])
def test_each_slice_is_an_index_range_read_with_a_limit(tmp_path, role) -> None:
    root = make_project(tmp_path)
    broad_reads(root, 50, "", NOW)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    count = gate.GATE_MODIFIED_ROWS if role else gate.GATE_NEWEST_ROWS
    compiled = gate._COMPILED[(role, count)]
    values = {"project": "p", "path": REL, **({"role": role} if role else {})}
    sql, params = compiled.sql_and_params(**values)
    assert re.search(rf"LIMIT {count}\b", sql)
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        plan = " | ".join(str(row[-1]) for row in cursor.fetchall())
    index = "obsfile_path_role_idx" if role else "obsfile_project_path_idx"
    # An index search on the file's rows, already in `created` order (no sort of them all).
    assert f"USING INDEX {index}" in plan, plan
    assert "TEMP B-TREE" not in plan, plan
