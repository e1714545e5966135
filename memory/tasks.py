"""Huey tasks: take ids, call one service.

Nothing is lost when the consumer dies: events live in the database, not in the huey
queue. The queue only says "look at this session"; the periodic sweep and the consumer's
start hand back events whose consumer vanished and re-enqueue sessions with waiting work.
"""

from __future__ import annotations

import logging
import threading

from huey import crontab
from huey.contrib.djhuey import db_periodic_task, db_task, on_startup

from memory.compression import service
from memory.retrieval.embeddings import store as embeddings_store

log = logging.getLogger(__name__)


@db_task()
def session_events_process_task(session_pk: int) -> None:
    """Compress a session's pending events (observations in batches, then summaries), then
    embed what was stored: in the consumer, after the store, never on a hook's path."""
    service.session_events_process(session_pk=session_pk)
    try:
        embeddings_store.embed_session(session_pk)
    except Exception:  # noqa: BLE001 - a missing vector is made by the sweep; compression stands
        log.exception("embedding session %s failed; the sweep retries", session_pk)


# One sweep embeds at most this many rows, so a model change re-embeds in the background
# over several minutes instead of holding the consumer for one long task.
EMBED_SWEEP_ROWS = 5000


@db_periodic_task(crontab(minute="*"))
def embeddings_sweep_task() -> None:
    """Vectors for rows that lack one of the configured model: imports, prompts of sessions
    with no compression yet, and every row after a model change."""
    embeddings_store.embed_pending(limit=EMBED_SWEEP_ROWS)


def events_sweep(*, pending_older_than_seconds: int) -> list[int]:
    """Reclaim stale claims, then enqueue every session that has events waiting."""
    sessions = set(service.events_reclaim_stale())
    sessions.update(
        service.sessions_with_pending_events(older_than_seconds=pending_older_than_seconds)
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
    except Exception:  # noqa: BLE001 - a sweep failure must not stop the consumer; the periodic sweep retries
        log.exception("start-up sweep failed")
        return
    if sessions:
        log.info("start-up: re-enqueued %d session(s) with waiting events", len(sessions))
