"""Raw payload retention and database hygiene.

claude-mem users found 25–136 GB databases holding a few MB of memory (peers §2.3: verbatim
payloads kept forever, no VACUUM). cmem keeps what it learned and lets the raw input go:

- `payloads_prune`: the sanitized hook payload of every *finished* queue event older than
  CLAUDE_MEM_RETENTION_DAYS is emptied. The row itself stays (a few bytes) because its
  `tool_use_id` is what makes a late re-delivery of the same tool use a no-op; observations,
  summaries, prompts and sessions are never touched. Pending and claimed events are work not
  done yet and keep their payload whatever their age.
- `database_compact`: `PRAGMA optimize`, a WAL checkpoint and `VACUUM`, so freed pages go
  back to the file system (SQLite only; PostgreSQL runs its own autovacuum).
- `database_size` / `database_growth`: the size on disk and how fast it grows, from daily
  samples kept in `<data dir>/state/db-size.json` (a day's first look records one).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path

from django.db import connection, transaction
from django.utils import timezone

from memory import config
from memory.models import Event

log = logging.getLogger(__name__)

FINISHED = [Event.Status.DONE, Event.Status.SKIPPED, Event.Status.FAILED]
# Emptied in slices so one prune never holds the write lock for long (hooks wait on it).
PRUNE_SLICE = 500
SIZE_SAMPLES_KEPT = 90


@dataclass(frozen=True)
class RetentionReport:
    days: int
    cutoff: datetime | None
    dry_run: bool
    payloads: int  # events whose payload was (or would be) emptied
    bytes_freed: int  # payload bytes (JSON text) dropped, before VACUUM returns the pages

    def describe(self) -> str:
        if self.cutoff is None:
            return "Retention is off (CLAUDE_MEM_RETENTION_DAYS=0): raw payloads are kept forever."
        verb = "Would empty" if self.dry_run else "Emptied"
        return (
            f"{verb} the raw payloads of {self.payloads:,} finished event(s) captured before "
            f"{self.cutoff:%Y-%m-%d %H:%M} UTC ({self.bytes_freed:,} bytes); "
            "observations and summaries are kept."
        )


def retention_days() -> int:
    return max(0, config.get_int("CLAUDE_MEM_RETENTION_DAYS"))


def _expired(cutoff: datetime):  # type: ignore[no-untyped-def]
    return Event.objects.filter(created__lt=cutoff, status__in=FINISHED).exclude(payload={})


def payloads_prune(*, days: int | None = None, dry_run: bool = False) -> RetentionReport:
    """Empty the payloads of finished events older than `days` (default: the setting).

    1. `days` = 0 means keep forever: nothing happens.
    2. Count the expired rows and the bytes their payloads take (`length(payload)`).
    3. Unless `dry_run`, empty them PRUNE_SLICE rows per transaction.
    """
    days = retention_days() if days is None else max(0, days)
    if days == 0:
        return RetentionReport(days=0, cutoff=None, dry_run=dry_run, payloads=0, bytes_freed=0)
    cutoff = timezone.now() - timedelta(days=days)
    ids = list(_expired(cutoff).order_by("pk").values_list("pk", flat=True))
    freed = _payload_bytes(ids)
    if not dry_run:
        for start in range(0, len(ids), PRUNE_SLICE):
            with transaction.atomic():
                Event.objects.filter(pk__in=ids[start : start + PRUNE_SLICE]).update(payload={})
        if ids:
            log.info("retention: emptied %d payload(s) older than %d day(s)", len(ids), days)
    return RetentionReport(
        days=days, cutoff=cutoff, dry_run=dry_run, payloads=len(ids), bytes_freed=freed
    )


def _payload_bytes(ids: list[int]) -> int:
    total = 0
    table = Event._meta.db_table
    with connection.cursor() as cursor:
        for start in range(0, len(ids), PRUNE_SLICE):
            chunk = ids[start : start + PRUNE_SLICE]
            marks = ",".join(["%s"] * len(chunk))
            length = (
                "octet_length(payload::text)"
                if connection.vendor == "postgresql"
                else "length(CAST(payload AS BLOB))"
            )
            cursor.execute(
                f"SELECT COALESCE(SUM({length}), 0) FROM {table} WHERE id IN ({marks})", chunk
            )  # placeholders only
            total += int(cursor.fetchone()[0] or 0)
    return total


# -- database size and compaction -----------------------------------------------------------------


def _sqlite_files() -> list[Path]:
    name = Path(str(connection.settings_dict["NAME"]))
    return [name, name.with_name(name.name + "-wal"), name.with_name(name.name + "-shm")]


def database_size() -> int:
    """Bytes on disk: the SQLite file with its WAL, or PostgreSQL's `pg_database_size`."""
    if connection.vendor == "sqlite":
        return sum(p.stat().st_size for p in _sqlite_files() if p.exists())
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        return int(cursor.fetchone()[0])


def database_compact() -> tuple[int, int]:
    """Optimize, checkpoint and VACUUM; returns (bytes before, bytes after). VACUUM needs
    the write lock for its whole run and cannot run in a transaction: call it from a
    command or a nightly task, never from a request."""
    before = database_size()
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA optimize")
            cursor.execute("VACUUM")
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return before, database_size()


def _samples_path() -> Path:
    return config.data_dir() / "state" / "db-size.json"


def _samples() -> dict[str, int]:
    try:
        data = json.loads(_samples_path().read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): int(v) for k, v in data.items() if isinstance(v, int | float)}


def database_size_sample(*, today: date | None = None) -> int:
    """The size now, recorded as today's sample (the first look of a day wins)."""
    size = database_size()
    day = (today or timezone.now().date()).isoformat()
    samples = _samples()
    if day not in samples:
        samples[day] = size
        kept = dict(sorted(samples.items())[-SIZE_SAMPLES_KEPT:])
        try:
            config.write_atomic(_samples_path(), json.dumps(kept, indent=1).encode())
        except OSError:  # a full or read-only disk must not break doctor or the stats page
            log.warning("could not record the database size sample")
    return size


@dataclass(frozen=True)
class Growth:
    size: int
    per_day: float | None  # bytes per day over the sampled span; None with < 2 samples
    span_days: int

    def describe(self) -> str:
        text = f"database {human_bytes(self.size)}"
        if self.per_day is None:
            return text + " (growth per day known after a second day of use)"
        sign = "+" if self.per_day >= 0 else "-"
        return f"{text}, {sign}{human_bytes(abs(self.per_day))}/day over {self.span_days} day(s)"


def database_growth(*, today: date | None = None) -> Growth:
    """Size now and the mean daily growth between the oldest kept sample and today."""
    size = database_size_sample(today=today)
    samples = sorted(_samples().items())
    if len(samples) < 2:
        return Growth(size=size, per_day=None, span_days=0)
    first_day, first_size = samples[0]
    last_day = samples[-1][0]
    span = (date.fromisoformat(last_day) - date.fromisoformat(first_day)).days
    if span <= 0:
        return Growth(size=size, per_day=None, span_days=0)
    return Growth(size=size, per_day=(size - first_size) / span, span_days=span)


def human_bytes(value: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(value) < 1024 or unit == "GB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} GB"


def database_has_slack(*, ratio: float = 0.1) -> bool:
    """Whether free pages are over `ratio` of the SQLite file: only then is VACUUM (which
    holds the write lock while it rewrites the file) worth running unattended."""
    if connection.vendor != "sqlite":
        return False
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA freelist_count")
        free = int(cursor.fetchone()[0])
        cursor.execute("PRAGMA page_count")
        pages = int(cursor.fetchone()[0])
    return pages > 0 and free / pages > ratio


def retention_run() -> RetentionReport:
    """The nightly job: prune by the setting, then compact when enough space was freed."""
    report = payloads_prune()
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA optimize")
        if database_has_slack():
            before, after = database_compact()
            log.info("retention: VACUUM %s -> %s", human_bytes(before), human_bytes(after))
    database_size_sample()
    return report
