"""The spool's huey tasks: what hooks spooled while the worker was down is drained at
consumer start, when a hook request notices a backlog (`spool_kick`), and once a minute
(huey's periodic resolution) as a safety net. The tasks keep the names they were first
registered under (memory/runtime/task_names.py)."""

from __future__ import annotations

import threading
import time

from huey import crontab
from huey.contrib.djhuey import db_periodic_task, db_task, on_startup

from memory.hooks import spool
from memory.runtime.task_names import registered_in

# Hook requests that see a backlog enqueue an ingest at most this often.
KICK_INTERVAL_S = 5.0
_last_kick = [0.0]
# The consumer's worker threads share one process: one ingester at a time keeps the order.
_ingesting = threading.Lock()


@db_task()
@registered_in("memory.spool_tasks")
def spool_ingest_task() -> None:
    if not _ingesting.acquire(blocking=False):
        return
    try:
        spool.spool_ingest()
    finally:
        _ingesting.release()


@on_startup()
def spool_ingest_at_start() -> None:
    """Each consumer start (the worker started or restarted) drains what hooks spooled."""
    spool_ingest_task()


@db_periodic_task(crontab(minute="*"))
@registered_in("memory.spool_tasks")
def spool_ingest_periodic_task() -> None:
    if spool.spool_backlog():
        spool_ingest_task()


def spool_kick() -> None:
    """Enqueue an ingest when something waits in the spool (cheap: one listdir, debounced)."""
    now = time.monotonic()
    if now - _last_kick[0] < KICK_INTERVAL_S:
        return
    _last_kick[0] = now
    if spool.spool_backlog():
        spool_ingest_task()
