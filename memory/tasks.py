"""Every huey task of cmem: take ids, call one service.

- Compression: `session_events_process_task` per session, the sweep (every minute and at
  consumer start). Nothing is lost when the consumer dies: events live in the database, not
  in the huey queue. The queue only says "look at this session"; the sweeps hand back events
  whose consumer vanished and re-enqueue sessions with waiting work.
- The spool: drained at consumer start, when a hook request notices a backlog
  (`spool_kick`), and once a minute (huey's periodic resolution) as a safety net.
- Retention: the nightly raw-payload job (memory/housekeeping/retention.py).

djhuey autodiscovers `tasks.py`; `MemoryConfig.ready()` imports it as well, so the web
process (which enqueues) and the consumer (which runs) know the same tasks.

Huey registers a task as "<module>.<function>" and a queued message carries that string.
The spool and retention tasks lived in `memory.spool_tasks` and `memory.retention_tasks`
before they merged here, so they keep those registered names (`_registered_in`): a message
queued before an upgrade still finds its task after it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from huey import crontab
from huey.contrib.djhuey import db_periodic_task, db_task, on_startup

from memory.compression import pipeline
from memory.hooks import spool
from memory.housekeeping.clock_skew import future_rows_repair
from memory.housekeeping.retention import retention_run
from memory.retrieval.embeddings import store as embeddings_store

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., object])


def _registered_in(module: str) -> Callable[[F], F]:
    """Register the task under its pre-merge module name (see the module docstring)."""

    def mark(fn: F) -> F:
        fn.__module__ = module
        return fn

    return mark


@db_task()
def session_events_process_task(session_pk: int) -> None:
    """Compress a session's pending events (observations in batches, then summaries), then
    embed what was stored: in the consumer, after the store, never on a hook's path."""
    pipeline.session_events_process(session_pk=session_pk)
    try:
        embeddings_store.embed_session(session_pk)
    except Exception:
        log.exception("embedding session %s failed; the sweep retries", session_pk)


# One sweep embeds at most this many rows, so a model change re-embeds in the background
# over several minutes instead of holding the consumer for one long task.
EMBED_SWEEP_ROWS = 5000


@db_periodic_task(crontab(minute="*"))
def embeddings_sweep_task() -> None:
    """Vectors for rows that lack one of the configured model: imports, prompts of sessions
    with no compression yet, and every row after a model change."""
    embeddings_store.embed_pending(limit=EMBED_SWEEP_ROWS, skip_settled=True)


def events_sweep(*, pending_older_than_seconds: int) -> list[int]:
    """Repair rows dated in the future (a clock that jumped back), reclaim stale claims, then
    enqueue every session that has events waiting. `created <= now - 60 s` alone would
    strand events dated hours ahead: future_rows_repair stamps them with now and names
    their sessions, which are enqueued at once."""
    sessions = set(future_rows_repair())
    sessions.update(pipeline.events_reclaim_stale())
    sessions.update(
        pipeline.sessions_with_pending_events(older_than_seconds=pending_older_than_seconds)
    )
    for session_pk in sorted(sessions):
        session_events_process_task(session_pk)
    return sorted(sessions)


@db_periodic_task(crontab(minute="*"))
def events_sweep_task() -> None:
    # Pending events younger than a minute have their own task on the way (enqueued on commit).
    events_sweep(pending_older_than_seconds=60)


_started = threading.Event()


@on_startup()
def events_sweep_on_start() -> None:
    # Startup hooks run once per worker thread; one sweep per process is enough.
    if _started.is_set():
        return
    _started.set()
    try:
        sessions = events_sweep(pending_older_than_seconds=0)
    except Exception:  # a sweep failure must not stop the consumer; the periodic sweep retries
        log.exception("start-up sweep failed")
        return
    if sessions:
        log.info("start-up: re-enqueued %d session(s) with waiting events", len(sessions))


# ---------------------------------------------------------------------------------------
# The spool

# Hook requests that see a backlog enqueue an ingest at most this often.
KICK_INTERVAL_S = 5.0
_last_kick = [0.0]
# The consumer's worker threads share one process: one ingester at a time keeps the order.
_ingesting = threading.Lock()


@db_task()
@_registered_in("memory.spool_tasks")
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
@_registered_in("memory.spool_tasks")
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


# ---------------------------------------------------------------------------------------
# Retention


@db_periodic_task(crontab(minute="17", hour="4"))
@_registered_in("memory.retention_tasks")
def retention_task() -> None:
    retention_run()
