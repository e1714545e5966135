"""The Markdown form of the memory (issue 34): export, import into an empty memory, export
again gives the same bytes; merges by global id; bad files are refused whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.importers.demo import demo_load
from memory.models import Observation, Session, Tombstone
from memory.travel.markdown import export_markdown
from memory.travel.merge import import_markdown

pytestmark = pytest.mark.django_db


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _empty_memory() -> None:
    Session.objects.all().delete()
    Tombstone.objects.all().delete()


def test_demo_round_trip_gives_identical_bytes(tmp_path: Path, data_dir: Path) -> None:
    demo_load()
    first, second = tmp_path / "one", tmp_path / "two"
    written = export_markdown(first)
    assert written > 10
    _empty_memory()
    report = import_markdown(first)
    assert report.created > 0 and report.conflicts == 0, report.describe()
    export_markdown(second)
    a, b = _tree(first), _tree(second)
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name] == b[name], name
    again = import_markdown(second)
    assert again.created == again.updated == again.corrected == 0, again.describe()
    assert Observation.objects.count() > 0
