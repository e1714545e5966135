"""The gate's hot-path writes (memory/runtime/compiled_sql.py CompiledInsert): the row is the one the ORM's
create() would write, field by field, defaults included; a duplicate raises IntegrityError
as create() does; and session_ensure on a session created in between falls back to it.
insert_new skips a duplicate by ON CONFLICT DO NOTHING (no savepoint), a compiled fetch
gives the instance the ORM would, and compiled statements run on the SQLite connection
itself with Django's errors and query logging kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import IntegrityError, connection, transaction
from django.forms.models import model_to_dict
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory.agents import claude_code
from memory.briefing.file_views import session_ensure
from memory.ledger import ledger_insert, ledger_record
from memory.models import ContextCache, Event, FileView, LedgerEntry, Session
from memory.projects import project_for_cwd
from memory.runtime.compiled_sql import CompiledFetch, CompiledInsert, CompiledQuery, row, rows
from tests.briefing.gate_helpers import fixture, make_project
from tests.factories import SessionFactory

pytestmark = pytest.mark.django_db


def test_a_compiled_ledger_row_is_the_orm_row(tmp_path: Path) -> None:
    session = SessionFactory(root=make_project(tmp_path), session_id="s")
    kind, text = LedgerEntry.Kind.GATE_DENY, "x" * 400
    row = {"project": "proj", "path": "/a.py", "shown": text, "avoided": 900, "detail": "reread"}
    pk = ledger_insert(kind=kind, session=session, **row)
    orm = ledger_record(kind=kind, session=session, **row)
    ours, theirs = LedgerEntry.objects.get(pk=pk), LedgerEntry.objects.get(pk=orm.pk)
    assert abs((ours.created - theirs.created).total_seconds()) < 5
    skip = {"id", "created"}
    assert {k: v for k, v in model_to_dict(ours).items() if k not in skip} == {
        k: v for k, v in model_to_dict(theirs).items() if k not in skip
    }
    assert ours.tokens_shown == 100 and ours.owner_id == session.owner_id


def test_a_duplicate_raises_integrity_error_and_unknown_fields_are_refused(tmp_path) -> None:
    session = SessionFactory(root=make_project(tmp_path), session_id="s")
    views = CompiledInsert(FileView)
    views.insert(session_id=session.pk, path="/a.py", denied=True, partial=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        views.insert(session_id=session.pk, path="/a.py")
    view = FileView.objects.get(session=session, path="/a.py")
    assert view.denied and view.partial and view.content_hash == "" and view.seen is not None
    with pytest.raises(TypeError):
        views.insert(session_id=session.pk, path="/b.py", colour="red")


def test_session_ensure_told_absent_falls_back_to_a_session_made_in_between(tmp_path) -> None:
    root = make_project(tmp_path)
    payload = fixture("PreToolUse.json")
    payload.update(cwd=str(root), session_id="raced")
    event = claude_code.parse("file-context", payload)
    made = SessionFactory(root=root, session_id="raced")  # session-init won the race
    found = session_ensure(event=event, project=project_for_cwd(str(root)), absent=True)
    assert found.pk == made.pk
    fresh = payload | {"session_id": "new-one"}
    created = session_ensure(
        event=claude_code.parse("file-context", fresh), project=project_for_cwd(str(root))
    )
    stored = Session.objects.get(pk=created.pk)
    assert stored.session_id == "new-one" and stored.project == created.project
    assert stored.status == Session.Status.ACTIVE and stored.cwd == str(root)


def test_insert_new_skips_a_duplicate_without_a_savepoint_and_the_transaction_goes_on(
    tmp_path: Path,
) -> None:
    session = SessionFactory(root=make_project(tmp_path), session_id="s")
    events = CompiledInsert(Event)
    row = {"session_id": session.pk, "kind": Event.Kind.OBSERVATION, "tool_use_id": "toolu_1"}
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        first = events.insert_new(**row, payload={"n": 1})
        again = events.insert_new(**row, payload={"n": 2})
        # Still usable after the duplicate (PostgreSQL aborts a transaction on an error).
        other = events.insert_new(**(row | {"tool_use_id": "toolu_2"}), payload={"n": 3})
    assert first is not None and again is None and other not in {None, first}
    assert not any("SAVEPOINT" in q["sql"] for q in queries.captured_queries)
    stored = Event.objects.filter(session=session).order_by("pk")
    assert [(e.pk, e.tool_use_id, e.payload) for e in stored] == [
        (first, "toolu_1", {"n": 1}),
        (other, "toolu_2", {"n": 3}),
    ]
    # The partial unique constraint leaves events without a tool_use_id free to repeat.
    blank = row | {"tool_use_id": ""}
    assert None not in {events.insert_new(**blank), events.insert_new(**blank)}


def test_insert_new_still_raises_for_what_is_not_a_duplicate(tmp_path: Path) -> None:
    events = CompiledInsert(Event)
    with pytest.raises(IntegrityError), transaction.atomic():
        # No such session: a foreign key is not a uniqueness constraint, so it is not skipped.
        events.insert_new(session_id=987654, kind=Event.Kind.OBSERVATION, tool_use_id="t")
        connection.check_constraints()  # SQLite checks deferred foreign keys at commit
    session = SessionFactory(root=make_project(tmp_path), session_id="s")
    with pytest.raises(IntegrityError), transaction.atomic():
        events.insert_new(session_id=session.pk, kind=None, tool_use_id="t")  # NOT NULL


def test_a_compiled_fetch_gives_the_orm_instance(tmp_path: Path) -> None:
    made = SessionFactory(root=make_project(tmp_path), session_id="s", prompt="first")
    Session.objects.filter(pk=made.pk).update(ended=timezone.now(), model="claude-x")
    fetch = CompiledFetch(
        Session,
        lambda p: Session.objects.filter(platform=p["platform"], session_id=p["session_id"]),
        "platform",
        "session_id",
    )
    ours = fetch.first(platform="claude-code", session_id="s")
    theirs = Session.objects.get(pk=made.pk)
    assert model_to_dict(ours) == model_to_dict(theirs)
    assert {f.attname: getattr(ours, f.attname) for f in Session._meta.concrete_fields} == {
        f.attname: getattr(theirs, f.attname) for f in Session._meta.concrete_fields
    }
    assert ours.started.tzinfo is not None and ours.ended.tzinfo is not None
    assert not ours._state.adding and ours._state.db == "default"
    ours.cwd = "/elsewhere"
    ours.save(update_fields=["cwd"])
    assert Session.objects.get(pk=made.pk).cwd == "/elsewhere"
    assert fetch.first(platform="claude-code", session_id="absent") is None
    joined = CompiledFetch(
        Session,
        lambda p: Session.objects.filter(session_id=p["sid"]).select_related("owner"),
        "sid",
    )
    with pytest.raises(RuntimeError):  # it would select the owner's columns too
        joined.first(sid="s")


def test_a_compiled_query_runs_on_the_sqlite_connection_unless_queries_are_watched(
    tmp_path: Path,
) -> None:
    made = SessionFactory(root=make_project(tmp_path), session_id="s")
    by_id = CompiledQuery(
        lambda p: Session.objects.filter(session_id=p["sid"]).values_list("pk", "session_id"),
        "sid",
    )
    assert by_id.rows(sid="s") == [(made.pk, "s")] and by_id.row(sid="s") == (made.pk, "s")
    assert by_id.rows(sid="none") == [] and by_id.row(sid="none") is None
    # What observes queries (DEBUG, django_assert_num_queries) still sees every statement.
    with CaptureQueriesContext(connection) as queries:
        assert by_id.row(sid="s") == (made.pk, "s")
    assert len(queries.captured_queries) == 1
    # Errors are django.db's, as from Django's cursor; `%%` is a literal percent sign.
    with pytest.raises(IntegrityError), transaction.atomic():
        row("INSERT INTO memory_session (id) VALUES (%s) RETURNING id", [made.pk])
    assert rows("SELECT CAST(%s AS TEXT) || '%%'", ["50"]) == [("50%",)]


def test_a_compiled_upsert_inserts_then_updates_the_named_fields(tmp_path: Path) -> None:
    caches = CompiledInsert(ContextCache)
    first = caches.upsert(
        conflict="project", update=("text", "key"), project="p", text="a", key="1"
    )
    stored = ContextCache.objects.get(project="p")
    again = caches.upsert(
        conflict="project", update=("text", "key"), project="p", text="b", key="2", tokens=9
    )
    assert again == first and ContextCache.objects.count() == 1
    updated = ContextCache.objects.get(project="p")
    # Only the named fields change; the row keeps its creation time and its other values.
    assert (updated.text, updated.key, updated.tokens) == ("b", "2", 0)
    assert updated.created == stored.created


def test_plain_values_and_absent_fields_are_stored_as_the_orm_stores_them(tmp_path) -> None:
    session = SessionFactory(root=make_project(tmp_path), session_id="s")
    events = CompiledInsert(Event)
    values = {"session_id": session.pk, "tool_name": "Bash", "prompt_number": 3, "payload": {}}
    pk = events.insert(kind=Event.Kind.OBSERVATION, tool_use_id="t1", **values)
    orm = Event.objects.create(kind=Event.Kind.OBSERVATION, tool_use_id="t2", **values)
    ours, theirs = Event.objects.get(pk=pk), Event.objects.get(pk=orm.pk)
    skip = {"id", "created", "tool_use_id"}
    assert {k: v for k, v in model_to_dict(ours).items() if k not in skip} == {
        k: v for k, v in model_to_dict(theirs).items() if k not in skip
    }
    assert ours.last_error == "" and ours.claimed_at is None and ours.done_at is None
