"""The gate's hot-path writes (memory/db.py CompiledInsert): the row is the one the ORM's
create() would write, field by field, defaults included; a duplicate raises IntegrityError
as create() does; and session_ensure on a session created in between falls back to it."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.db import IntegrityError, transaction
from django.forms.models import model_to_dict

from memory.agents import claude_code
from memory.db import CompiledInsert
from memory.models import FileView, LedgerEntry, Session
from memory.projects import project_for_cwd
from memory.recall.file_views import session_ensure
from memory.recall.ledger import ledger_insert, ledger_record
from tests.factories import SessionFactory
from tests.memory.gate_helpers import fixture, make_project

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
