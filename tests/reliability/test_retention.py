"""Raw payload retention (CLAUDE_MEM_RETENTION_DAYS), `cmem prune`, VACUUM, and the database
size and growth per day shown by `cmem doctor` and the stats page."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from datetime import date, timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils import timezone

from memory.housekeeping import retention
from memory.models import Event, Observation, Session, Summary
from tests.support import CMEM, make_worker_env

PAYLOAD = {
    "tool_name": "Bash",
    "tool_input": {"command": "make"},
    "tool_response": {"stdout": "ok " * 200},
}


def _event(session: Session, *, days_old: float, status: str, n: int) -> Event:
    return Event.objects.create(
        session=session, kind="observation", tool_name="Bash", tool_use_id=f"t{n}", payload=PAYLOAD,
        status=status, created=timezone.now() - timedelta(days=days_old),
    )  # fmt: skip


@pytest.mark.django_db
def test_prune_empties_old_finished_payloads_and_keeps_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session = Session.objects.create(session_id="r", project="demo", cwd="/tmp")
    old_done = _event(session, days_old=40, status="done", n=1)
    old_failed = _event(session, days_old=40, status="failed", n=2)
    old_pending = _event(session, days_old=40, status="pending", n=3)
    old_claimed = _event(session, days_old=40, status="claimed", n=4)
    recent_done = _event(session, days_old=5, status="done", n=5)
    old = timezone.now() - timedelta(days=40)
    Observation.objects.create(
        session=session, project="demo", type="discovery", title="kept", created=old
    )
    Summary.objects.create(session=session, project="demo", request="kept", created=old)

    dry = retention.payloads_prune(days=30, dry_run=True)
    assert dry.payloads == 2 and dry.bytes_freed > 2 * 600
    assert "Would empty" in dry.describe()
    assert Event.objects.get(pk=old_done.pk).payload == PAYLOAD

    report = retention.payloads_prune(days=30)
    assert report.payloads == 2
    assert Event.objects.get(pk=old_done.pk).payload == {}
    assert Event.objects.get(pk=old_failed.pk).payload == {}
    for kept in (
        old_pending,
        old_claimed,
        recent_done,
    ):  # unfinished work and recent rows keep theirs
        assert Event.objects.get(pk=kept.pk).payload == PAYLOAD
    # The rows stay (their tool_use_id keeps a late re-delivery a no-op); memory is untouched.
    assert Event.objects.count() == 5
    assert (
        Observation.objects.filter(title="kept").exists()
        and Summary.objects.filter(request="kept").exists()
    )
    assert retention.payloads_prune(days=30).payloads == 0  # idempotent

    monkeypatch.setenv("CLAUDE_MEM_RETENTION_DAYS", "0")
    off = retention.payloads_prune()
    assert off.cutoff is None and off.payloads == 0 and "forever" in off.describe()
    monkeypatch.setenv("CLAUDE_MEM_RETENTION_DAYS", "3")
    assert retention.payloads_prune(dry_run=True).payloads == 1  # the setting is the default


@pytest.mark.django_db
def test_prune_command_options(capsys: pytest.CaptureFixture[str]) -> None:
    session = Session.objects.create(session_id="c", project="demo", cwd="/tmp")
    _event(session, days_old=10, status="done", n=1)
    call_command("prune", "--dry-run", "--days", "7")
    out = capsys.readouterr().out
    assert "Would empty the raw payloads of 1 finished event(s)" in out and "database" in out
    assert Event.objects.get().payload == PAYLOAD
    with pytest.raises(CommandError, match="0 \\(keep forever\\) or more"):
        call_command("prune", "--days", "-1")


def test_growth_per_day_comes_from_daily_samples(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = iter([1_000_000, 1_000_000, 3_000_000])
    monkeypatch.setattr(retention, "database_size", lambda: next(sizes))
    first = retention.database_growth(today=date(2026, 1, 1))
    assert first.per_day is None and "second day" in first.describe()
    assert retention.database_growth(today=date(2026, 1, 1)).per_day is None  # same day: one sample
    later = retention.database_growth(today=date(2026, 1, 5))
    assert later.per_day == pytest.approx(500_000) and later.span_days == 4
    assert "+488.3 KB/day over 4 day(s)" in later.describe()
    samples = json.loads((data_dir / "state" / "db-size.json").read_text())
    assert samples == {"2026-01-01": 1_000_000, "2026-01-05": 3_000_000}


@pytest.mark.django_db
def test_the_stats_page_shows_database_size_and_growth(client: Client) -> None:
    body = client.get("/stats/").content.decode()
    assert 'id="database-size"' in body and "Database" in body


@pytest.mark.slow
def test_prune_and_vacuum_shrink_a_real_database_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    env = make_worker_env(data, 9, CLAUDE_MEM_RETENTION_DAYS="30")
    subprocess.run([CMEM, "migrate", "--noinput", "-v", "0"], env=env, check=True, timeout=120)
    db = data / "cmem.sqlite3"
    old = (timezone.now() - timedelta(days=60)).isoformat()
    with sqlite3.connect(db) as conn:
        conn.execute(
            "insert into memory_session (platform, session_id, project, project_root, cwd, transcript_path, status, "
            "prompt_counter, started) values ('claude-code', 'v', 'demo', '', '/tmp', '', 'completed', 0, ?)",
            (old,),
        )
        big = json.dumps({"tool_response": {"stdout": "z" * 20_000}})
        conn.executemany(
            "insert into memory_event (session_id, kind, tool_name, tool_use_id, payload, status, attempts, last_error, created) "
            "values (1, 'observation', 'Bash', ?, ?, 'done', 1, '', ?)",
            [(f"t{i}", big, old) for i in range(400)],
        )
    before = retention_size(db)
    result = subprocess.run([CMEM, "prune"], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert (
        "Emptied the raw payloads of 400 finished event(s)" in result.stdout
        and "VACUUM" in result.stdout
    )
    after = retention_size(db)
    assert after < before / 4, (before, after)
    with sqlite3.connect(db) as conn:
        assert (
            conn.execute("select count(*) from memory_event where payload != '{}'").fetchone()[0]
            == 0
        )
        assert conn.execute("select count(*) from memory_event").fetchone()[0] == 400
        assert conn.execute("pragma integrity_check").fetchone()[0] == "ok"
    doctor = subprocess.run([CMEM, "doctor"], env=env, capture_output=True, text=True, timeout=120)
    assert "database " in doctor.stdout and "raw payloads kept 30 day(s)" in doctor.stdout, (
        doctor.stdout
    )


def retention_size(db: Path) -> int:
    return sum(p.stat().st_size for p in (db, db.with_name(db.name + "-wal")) if p.exists())
