"""Global ids (issue 34): every new row gets one; migration 0017 fills existing rows from
their own time, keeps the FTS triggers, and forget leaves tombstones."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

from memory import global_ids
from memory.housekeeping.forget import ForgetRequest, observations_forget
from memory.models import Observation, Session, Summary, Tombstone
from tests.support import CMEM, make_worker_env


def test_a_gid_has_the_form_it_is_checked_against() -> None:
    gid = global_ids.new_gid()
    assert global_ids.is_gid(gid) and len(gid) == 26
    assert not global_ids.is_gid("../../etc/passwd.md.....xx")
    assert not global_ids.is_gid(gid.lower()) and not global_ids.is_gid(42)


@pytest.mark.django_db
def test_new_rows_get_distinct_gids_and_forget_leaves_tombstones() -> None:
    session = Session.objects.create(session_id="g", project="demo", cwd="/tmp")
    first = Observation.objects.create(session=session, project="demo", title="one")
    second = Observation.objects.create(session=session, project="demo", title="two")
    summary = Summary.objects.create(session=session, project="demo", request="r")
    gids = {session.gid, first.gid, second.gid, summary.gid}
    assert len(gids) == 4 and all(global_ids.is_gid(g) for g in gids)

    observations_forget(request=ForgetRequest(ids=(first.pk,), dry_run=False))
    stone = Tombstone.objects.get()
    assert (stone.gid, stone.kind, stone.project) == (first.gid, "observation", "demo")
    assert Observation.objects.filter(gid=second.gid).exists()


@pytest.mark.slow
def test_migration_fills_existing_rows_in_time_order_and_keeps_search(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    env = make_worker_env(data, 9)
    migrate = [CMEM, "migrate", "--noinput", "-v", "0"]
    subprocess.run([*migrate, "memory", "0016"], env=env, check=True, timeout=120)
    db = data / "cmem.sqlite3"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "insert into memory_session (platform, session_id, project, project_root, cwd, transcript_path, status, "
            "prompt_counter, started) values ('claude-code', 'v', 'demo', '', '/tmp', '', 'completed', 0, "
            "'2026-01-02T00:00:00+00:00')"
        )
        for n, created in enumerate(("2026-01-03T00:00:00+00:00", "2026-01-02T10:00:00+00:00")):
            conn.execute(
                "insert into memory_observation (session_id, project, type, title, subtitle, facts, narrative, "
                "concepts, files_read, files_modified, tool_name, compressor, input_tokens, output_tokens, "
                "cache_read_tokens, cache_write_tokens, content_hash, created) values "
                "(1, 'demo', 'discovery', ?, '', '[]', 'zebra narrative', '[]', '[]', '[]', '', '', 0, 0, 0, 0, ?, ?)",
                (f"title {n}", f"h{n}", created),
            )
    subprocess.run(migrate, env=env, check=True, timeout=120)
    with sqlite3.connect(db) as conn:
        rows = conn.execute("select title, gid from memory_observation order by id").fetchall()
        (session_gid,) = conn.execute("select gid from memory_session").fetchone()
        hits = conn.execute(
            "select count(*) from memory_observation_fts where memory_observation_fts match 'zebra'"
        ).fetchone()
        conn.execute(
            "insert into memory_observation (session_id, project, type, title, subtitle, facts, narrative, "
            "concepts, files_read, files_modified, tool_name, compressor, input_tokens, output_tokens, "
            "cache_read_tokens, cache_write_tokens, content_hash, created, gid) values "
            "(1, 'demo', 'discovery', 'later zebra', '', '[]', '', '[]', '[]', '[]', '', '', 0, 0, 0, 0, 'h9', "
            "'2026-01-04T00:00:00+00:00', 'X')"
        )
        later_hits = conn.execute(
            "select count(*) from memory_observation_fts where memory_observation_fts match 'zebra'"
        ).fetchone()
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(
                "update memory_observation set gid = ? where title = 'title 1'", (rows[0][1],)
            )
    assert all(global_ids.is_gid(gid) for _, gid in rows) and global_ids.is_gid(session_gid)
    # Filled from each row's time: the older observation sorts first whatever its id.
    assert rows[1][1] < rows[0][1] and session_gid < rows[1][1]
    assert hits == (2,) and later_hits == (3,)  # the FTS triggers survived the migration


@pytest.mark.django_db
def test_json_export_and_import_keep_every_gid() -> None:
    from deliverables.models import Deliverable  # the app's model, only for this round trip
    from memory.importers.json_io import memory_export, memory_import
    from memory.importers.report import ImportReport

    session = Session.objects.create(session_id="j", project="demo", cwd="/tmp")
    observation = Observation.objects.create(session=session, project="demo", title="kept")
    summary = Summary.objects.create(session=session, project="demo", request="asked")
    deliverable = Deliverable.objects.create(
        session=session,
        project="demo",
        original_path="/tmp/r.md",
        stored_path="x",
        size=1,
        sha256="a" * 64,
    )
    before = {session.gid, observation.gid, summary.gid, deliverable.gid}
    document = memory_export()
    Session.objects.all().delete()
    memory_import(document=dict(document), report=ImportReport())
    after = {
        Session.objects.get().gid,
        Observation.objects.get().gid,
        Summary.objects.get().gid,
        Deliverable.objects.get().gid,
    }
    assert after == before
    # Importing again adds nothing, even with the content hash gone: the gid says "same row".
    document["sessions"][0]["observations"][0]["content_hash"] = ""
    memory_import(document=dict(document), report=ImportReport())
    assert Observation.objects.count() == 1 and Summary.objects.count() == 1


@pytest.mark.django_db
def test_a_stored_gid_is_that_row_wherever_a_document_puts_it() -> None:
    from memory.importers.json_io import memory_export, memory_import
    from memory.importers.report import ImportReport

    session = Session.objects.create(session_id="a", project="demo", cwd="/tmp")
    taken = Observation.objects.create(session=session, project="demo", title="mine")
    document = memory_export()
    other = document["sessions"][0]
    other["session_id"], other["gid"] = "b", "not-a-gid"
    other["observations"][0] |= {"title": "theirs", "content_hash": "zz", "gid": taken.gid}
    memory_import(document=dict(document), report=ImportReport())
    assert list(Observation.objects.values_list("title", flat=True)) == ["mine"]
    new_session = Session.objects.get(session_id="b")
    assert global_ids.is_gid(new_session.gid) and new_session.gid != session.gid
