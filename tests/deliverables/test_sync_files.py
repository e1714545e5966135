"""Deliverables' bytes for `cmem sync` (deliverables/sync_files.py): found by gid, listed
when missing here, and stored only when their sha256 is the row's."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from deliverables import sync_files
from deliverables.models import Deliverable
from memory import extensions
from memory.models import Session

pytestmark = pytest.mark.django_db


def test_bytes_are_found_listed_when_missing_and_stored_only_when_they_match(
    data_dir: Path,
) -> None:
    assert extensions.file_store("deliverable") is sync_files.FILE_STORE
    session = Session.objects.create(session_id="d", project="demo", cwd="/tmp")
    body = b"the report\n"
    row = Deliverable.objects.create(
        session=session,
        project="demo",
        original_path="/tmp/report.md",
        stored_path="demo/2026-12-04/report.md",
        size=len(body),
        sha256=hashlib.sha256(body).hexdigest(),
    )
    assert sync_files.file_of(row.gid) is None
    assert sync_files.missing() == [(row.gid, row.sha256)]
    assert not sync_files.put(row.gid, b"something else")
    assert sync_files.put(row.gid, body)
    path, sha, size = sync_files.file_of(row.gid) or (Path(), "", 0)
    assert path.read_bytes() == body and (sha, size) == (row.sha256, len(body))
    assert sync_files.missing() == []
    row.stored_path = "../../escape.md"
    row.save()
    assert not sync_files.put(row.gid, body)  # never outside the deliverables folder
