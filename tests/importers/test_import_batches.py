"""`memory_import` stores sessions in batches (memory/importers/json_io.py, IMPORT_BATCH):
the same rows as one-at-a-time, a repeated hash stored once, a bad session reported alone
while the rest of its batch is kept, and a re-import that adds nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import connection

from memory.importers import json_io
from memory.importers.report import ImportReport
from memory.models import Observation, ObservationFile, Prompt, Session, Summary

pytestmark = pytest.mark.django_db(transaction=True)

T0 = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)


def _session(n: int) -> dict[str, Any]:
    at = T0 + timedelta(minutes=n)
    return {
        "platform": "claude-code",
        "session_id": f"batch-{n}",
        "project": "shop-api",
        "project_root": "/home/dev/shop-api",
        "started": at.isoformat(),
        "prompts": [{"number": 1, "text": f"prompt {n}", "created": at.isoformat()}],
        "observations": [
            {
                "title": f"obs {n}/{i}",
                "narrative": f"narrative {n}/{i}",
                "files_read": ["/home/dev/shop-api/src/app.py"],
                "content_hash": f"h{n}-{i}",
                "created": at.isoformat(),
            }
            for i in range(3)
        ]
        # The same observation twice in the document: stored once.
        + [{"title": f"obs {n}/0", "content_hash": f"h{n}-0", "created": at.isoformat()}]
        # No hash: deduped by title, narrative and time.
        + [{"title": "bare", "narrative": "no hash", "created": at.isoformat()}] * 2,
        "summaries": [{"request": f"req {n}", "created": at.isoformat()}],
    }


def _document(sessions: list[dict[str, Any]]) -> dict[str, Any]:
    return {"format": json_io.FORMAT, "version": 1, "sessions": sessions}


def test_more_sessions_than_a_batch_store_every_row_once() -> None:
    count = json_io.IMPORT_BATCH + 7
    ticks: list[int] = []
    report = json_io.memory_import(
        document=_document([_session(n) for n in range(count)]),
        report=ImportReport(),
        progress=lambda: ticks.append(1),
    )
    assert len(ticks) == count
    assert Session.objects.count() == count
    assert Prompt.objects.count() == count
    assert Observation.objects.count() == count * 4
    assert report.imported["observation"] == count * 4
    assert report.skipped["observation"] == count * 2
    assert ObservationFile.objects.filter(path="src/app.py").count() == count * 3
    assert Summary.objects.count() == count
    assert Session.objects.get(session_id="batch-3").prompt_counter == 1

    again = json_io.memory_import(
        document=_document([_session(n) for n in range(count)]), report=ImportReport()
    )
    assert again.imported == {}
    assert Observation.objects.count() == count * 4


def test_a_bad_session_is_reported_and_the_rest_of_its_batch_kept() -> None:
    broken = _session(1)
    broken["prompts"] = [{"text": "a prompt without a number"}]
    nameless = {"project": "shop-api"}  # no session_id at all
    report = json_io.memory_import(
        document=_document([_session(0), broken, nameless, _session(2)]), report=ImportReport()
    )
    assert set(Session.objects.values_list("session_id", flat=True)) == {"batch-0", "batch-2"}
    assert Observation.objects.filter(session__session_id="batch-2").count() == 4
    assert report.skipped["problem"] == 2
    assert any("session #2" in p for p in report.problems)
    assert any("session #3" in p for p in report.problems)


def test_a_session_named_twice_in_a_document_adds_to_one_row() -> None:
    first, second = _session(5), _session(5)
    second["observations"] = [
        {"title": "later", "content_hash": "later", "created": T0.isoformat()}
    ]
    json_io.memory_import(document=_document([first, second]), report=ImportReport())
    assert Session.objects.count() == 1
    assert Observation.objects.count() == 5


def test_imported_rows_are_in_the_keyword_index() -> None:
    """The batched insert goes through the FTS triggers: every row is found by its words
    and the index agrees with the table (FTS5's own integrity check)."""
    if connection.vendor != "sqlite":
        pytest.skip("FTS5 is SQLite's keyword index")
    json_io.memory_import(
        document=_document([_session(n) for n in range(3)]), report=ImportReport()
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT rowid FROM memory_observation_fts WHERE memory_observation_fts MATCH ?",
            ['"narrative 2"'],
        )
        found = {row[0] for row in cursor.fetchall()}
        cursor.execute(
            "INSERT INTO memory_observation_fts(memory_observation_fts) VALUES ('integrity-check')"
        )
    expected = set(
        Observation.objects.filter(narrative__startswith="narrative 2/").values_list(
            "pk", flat=True
        )
    )
    assert expected and found == expected
