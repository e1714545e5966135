"""The automatic syncs, off by default (CLAUDE_MEM_SYNC_AUTO): on a schedule, or when a
session ends. Never on a hook's path: SessionEnd only enqueues (after its commit), and a
sync that fails is logged, never raised (the next one tries again).

Huey's schedule is fixed when the consumer starts while the interval is a setting, so the
periodic task wakes every five minutes and syncs only once the interval has gone by.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from huey import crontab
from huey.contrib.djhuey import db_periodic_task, db_task

from memory import config
from memory.travel.sync.state import SyncBusy, SyncError, remote_configured, state_load

log = logging.getLogger(__name__)


def sync_quietly() -> str:
    """One sync whose failure is a log line; a sync already running makes this one a no-op."""
    # Only when a sync runs: the engine brings the Markdown form, the merge and YAML, which
    # the serving process would otherwise import at every start (djhuey imports this module).
    from memory.travel.sync.engine import sync_run

    try:
        report = sync_run(wait_s=0)
    except SyncBusy:
        return ""
    except SyncError as exc:
        log.warning("automatic sync failed: %s", exc)
        return ""
    summary = report.describe().replace("\n", "; ")
    log.info("sync: %s", summary)
    return summary


def sync_due(now: datetime | None = None) -> bool:
    if config.get("CLAUDE_MEM_SYNC_AUTO").strip().lower() != "schedule" or not remote_configured():
        return False
    last = state_load().last_sync
    if not last:
        return True
    every = timedelta(minutes=config.get_int("CLAUDE_MEM_SYNC_INTERVAL_MINUTES"))
    return (now or datetime.now(UTC)) - datetime.fromisoformat(last) >= every


@db_periodic_task(crontab(minute="*/5"))
def sync_scheduled_task() -> None:
    if sync_due():
        sync_quietly()


@db_task()
def sync_task() -> None:
    sync_quietly()


def on_session_ended(*, session_pk: int) -> None:
    """memory.extensions' session_ended receiver: a background sync when the setting asks."""
    if config.get("CLAUDE_MEM_SYNC_AUTO").strip().lower() == "session-end" and remote_configured():
        sync_task()
