from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from deliverables.models import Deliverable
from memory.models import LedgerEntry, Observation, ObservationFile, Prompt, Session, Summary

pytestmark = pytest.mark.django_db(transaction=True)

T0 = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)


def seed() -> None:
    for n, project in enumerate(["shop-api", "shop-api", "blog"]):
        session = Session.objects.create(
            session_id=f"sid-{n}",
            project=project,
            project_root=f"/home/dev/{project}",
            cwd=f"/home/dev/{project}",
            transcript_path=f"/home/dev/.claude/projects/x/sid-{n}.jsonl",
            status="completed",
            prompt_counter=2,
            started=T0 + timedelta(days=n),
            ended=T0 + timedelta(days=n, hours=1),
        )
        prompts = [
            Prompt.objects.create(
                session=session,
                number=i,
                text=f"prompt {i} ünïcode ✓",
                created=T0 + timedelta(days=n, minutes=i),
            )
            for i in (1, 2)
        ]
        for i, kind in enumerate(["bugfix", "discovery"]):
            obs = Observation.objects.create(
                session=session,
                project=project,
                type=kind,
                title=f"{kind} {n}",
                subtitle="sub",
                facts=["a fact", "another"],
                narrative=f"narrative {n}/{i}",
                concepts=["gotcha"],
                files_read=["src/app.py"],
                files_modified=["src/app.py"] if i == 0 else [],
                tool_name="Edit",
                prompt_number=1,
                compressor="claude-haiku-4-5",
                input_tokens=120,
                output_tokens=40,
                cache_read_tokens=7,
                cache_write_tokens=3,
                content_hash=f"hash{n}{i}" if i == 0 else "",
                created=T0 + timedelta(days=n, minutes=10 + i),
            )
            ObservationFile.objects.create(
                observation=obs,
                project=project,
                path="src/app.py",
                role="read",
                content_hash="ab" * 32,
                created=obs.created,
            )
        Summary.objects.create(
            session=session,
            project=project,
            prompt_number=2,
            request="fix it",
            investigated="i",
            learned="l",
            completed="c",
            next_steps="n",
            notes="",
            compressor="offline",
            created=T0 + timedelta(days=n, minutes=50),
        )
        LedgerEntry.objects.create(
            session=session,
            project=project,
            kind="gate_deny",
            path="src/app.py",
            tokens_shown=180,
            tokens_avoided=2400,
            created=T0 + timedelta(days=n, minutes=20),
        )
        Deliverable.objects.create(
            session=session,
            prompt=prompts[1],
            project=project,
            original_path=f"/home/dev/reports/r{n}.md",
            stored_path=f"{project}/r{n}.md",
            size=12,
            sha256="cd" * 32,
            content_type="text/markdown",
            # One attached with work_state_write: the mark, title and note round-trip too.
            attached=n == 0,
            title="Weekly report" if n == 0 else "",
            note="for the review" if n == 0 else "",
            created=T0 + timedelta(days=n, minutes=55),
        )


def export(path: Path, *args: str) -> dict:
    call_command("export", str(path), *args, stdout=StringIO())
    data = json.loads(path.read_text())
    data.pop("exported_at")
    return data


def test_round_trip_into_an_empty_database_loses_nothing(tmp_path: Path) -> None:
    seed()
    first = export(tmp_path / "one.json")
    assert len(first["sessions"]) == 3
    Session.objects.all().delete()
    LedgerEntry.objects.all().delete()  # SET_NULL keeps ledger rows; empty the database fully
    assert (
        Observation.objects.count()
        == ObservationFile.objects.count()
        == Deliverable.objects.count()
        == 0
    )

    out = StringIO()
    call_command("import", "json", str(tmp_path / "one.json"), stdout=out)
    assert "observation    imported      6" in out.getvalue()
    second = export(tmp_path / "two.json")
    assert second == first
    assert Deliverable.objects.filter(prompt__number=2).count() == 3
    attached = Deliverable.objects.get(attached=True)
    assert (attached.title, attached.note) == ("Weekly report", "for the review")
    assert LedgerEntry.objects.filter(kind="gate_deny").count() == 3


def test_import_twice_adds_nothing(tmp_path: Path) -> None:
    seed()
    export(tmp_path / "one.json")
    counts = [
        m.objects.count()
        for m in (Session, Prompt, Observation, ObservationFile, Summary, Deliverable)
    ]
    out = StringIO()
    call_command("import", "json", str(tmp_path / "one.json"), stdout=out)
    assert [
        m.objects.count()
        for m in (Session, Prompt, Observation, ObservationFile, Summary, Deliverable)
    ] == counts
    assert "imported      0" in out.getvalue() and "imported      6" not in out.getvalue()


def test_export_one_project(tmp_path: Path) -> None:
    seed()
    data = export(tmp_path / "blog.json", "--project", "blog")
    assert data["project"] == "blog"
    assert [s["project"] for s in data["sessions"]] == ["blog"]


def test_import_refuses_a_foreign_document(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"sessions": []}))
    with pytest.raises(CommandError, match="not a cmem export"):
        call_command("import", "json", str(path), stdout=StringIO())
