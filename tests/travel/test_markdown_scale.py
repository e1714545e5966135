"""The Markdown round trip at 10k observations: byte-identical, and how long it takes.

Prints the figures (`pytest -s tests/travel/test_markdown_scale.py`): files, bytes per
1,000 observations, export and import seconds."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory.importers.bulk import insert_rows
from memory.models import Observation, ObservationFile, Prompt, Session, Summary, Tombstone
from memory.travel.markdown import export_markdown
from memory.travel.merge import import_markdown

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

SESSIONS, PER_SESSION = 100, 100
# A Zipf-like vocabulary of made-up words: real text has thousands of distinct words, and
# a dozen repeated everywhere would make the full-text index, not the import, the cost.
_SYLLABLES = [
    "ka",
    "to",
    "re",
    "mi",
    "su",
    "lo",
    "ve",
    "na",
    "di",
    "po",
    "ge",
    "ru",
    "sha",
    "qi",
    "ben",
    "tor",
]
VOCABULARY = [a + b + c for a in _SYLLABLES for b in _SYLLABLES for c in _SYLLABLES][:4000]
_WEIGHTS = [1 / (rank + 1) for rank in range(len(VOCABULARY))]


def _words(n: int, seed: int) -> str:
    return " ".join(random.Random(seed).choices(VOCABULARY, weights=_WEIGHTS, k=n))


def history_generate() -> int:
    """SESSIONS sessions of PER_SESSION observations (two files each), three prompts and a
    summary per session, a few rows superseded: through the bulk insert path."""
    start = datetime(2026, 1, 1, tzinfo=UTC)
    sessions = [
        Session(
            session_id=f"scale-{s}",
            project=f"project-{s % 3}",
            cwd=f"/work/project-{s % 3}",
            project_root=f"/work/project-{s % 3}",
            status="completed",
            started=start + timedelta(hours=8 * s),
        )
        for s in range(SESSIONS)
    ]
    insert_rows(Session, sessions)
    prompts, rows, summaries = [], [], []
    for s, session in enumerate(sessions):
        prompts += [
            Prompt(
                session=session,
                number=n,
                text=_words(25, s + n),
                created=session.started + timedelta(minutes=n),
            )
            for n in (1, 2, 3)
        ]
        summaries.append(
            Summary(
                session=session,
                project=session.project,
                request=_words(12, s),
                learned=_words(60, s + 1),
                completed=_words(40, s + 2),
                created=session.started + timedelta(hours=2),
            )
        )
        for i in range(PER_SESSION):
            n = s * PER_SESSION + i
            row = Observation(
                session=session,
                project=session.project,
                type="discovery",
                title=f"{_words(6, n)} {n}",
                subtitle=_words(12, n + 1),
                facts=[_words(10, n + k) for k in range(3)],
                narrative=_words(70, n + 5),
                concepts=["how-it-works"],
                created=session.started + timedelta(seconds=30 * i),
            )
            row.session_id = session.pk
            row.content_hash = row.compute_content_hash()
            rows.append(row)
    insert_rows(Prompt, prompts)
    insert_rows(Summary, summaries)
    insert_rows(Observation, rows)
    insert_rows(
        ObservationFile,
        [
            ObservationFile(
                observation=o,
                project=o.project,
                path=f"src/module_{(o.pk + k) % 400}.py",
                role=("read", "modified")[k],
                created=o.created,
            )  # fmt: skip
            for o in rows
            for k in (0, 1)
        ],
    )
    for older, newer in zip(rows[0:200:10], rows[1:201:10], strict=True):
        older.status, older.superseded_by = "superseded", newer
    Observation.objects.bulk_update(rows[0:200:10], ["status", "superseded_by"])
    return len(rows)


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_ten_thousand_observations_round_trip(tmp_path: Path) -> None:
    count = history_generate()
    first, second = tmp_path / "one", tmp_path / "two"
    # CPU seconds as well as wall seconds: on a busy machine the wall clock measures the others.
    wall, cpu = time.perf_counter(), time.process_time()
    files = export_markdown(first)
    exported = (time.perf_counter() - wall, time.process_time() - cpu)
    Session.objects.all().delete()
    Tombstone.objects.all().delete()
    wall, cpu = time.perf_counter(), time.process_time()
    report = import_markdown(first)
    imported = (time.perf_counter() - wall, time.process_time() - cpu)
    assert Observation.objects.count() == count, report.describe()
    export_markdown(second)
    a = _tree(first)
    assert a == _tree(second)
    size = sum(len(v) for v in a.values())
    notes = sum(len(v) for k, v in a.items() if "/files/" in k)
    own = sum(
        len(v)
        for k, v in a.items()
        if k.rsplit("/", 1)[-1].split("-")[0] not in ("session", "summary")
    )
    own -= notes  # observation files alone
    print(
        f"\n{count} observations: {files} files, {size / 1e6:.1f} MB"
        f" ({size / count * 1000 / 1e6:.2f} MB per 1,000 observations, all files;"
        f" observation files {own / count * 1000 / 1e6:.2f} MB, per-file notes {notes / count * 1000 / 1e6:.2f} MB);"
        f" export {exported[0]:.1f} s ({exported[1]:.1f} s CPU),"
        f" import into an empty memory {imported[0]:.1f} s ({imported[1]:.1f} s CPU)"
    )
