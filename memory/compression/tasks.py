"""Compression's huey tasks: `session_events_process_task` per session, and the sweep (every
minute and at consumer start). Nothing is lost when the consumer dies: events live in the
database, not in the huey queue. The queue only says "look at this session"; the sweeps hand
back events whose consumer vanished and re-enqueue sessions with waiting work.
"""

from __future__ import annotations

import logging
import threading

from huey import crontab
from huey.contrib.djhuey import db_periodic_task, db_task, on_startup

from memory.housekeeping.clock_skew import future_rows_repair
from memory.retrieval.embeddings import store as embeddings_store
from memory.runtime.task_names import registered_in

log = logging.getLogger(__name__)


@db_task()
@registered_in("memory.tasks")
def session_events_process_task(session_pk: int) -> None:
    """Compress a session's pending events (observations in batches, then summaries), then
    embed what was stored: in the consumer, after the store, never on a hook's path."""
    # In the task, not at the module's top: djhuey and the hook endpoints import this module
    # at every start of the serving process, and the compressors (the offline one's shell
    # and code grammars among them) are not needed until a batch runs.
    from memory.compression import pipeline

    pipeline.session_events_process(session_pk=session_pk)
    try:
        embeddings_store.embed_session(session_pk)
    except Exception:
        log.exception("embedding session %s failed; the sweep retries", session_pk)


def events_sweep(*, pending_older_than_seconds: int) -> list[int]:
    """Repair rows dated in the future (a clock that jumped back), reclaim stale claims, then
    enqueue every session that has events waiting. `created <= now - 60 s` alone would
    strand events dated hours ahead: future_rows_repair stamps them with now and names
    their sessions, which are enqueued at once."""
    # in the sweep: see session_events_process_task
    from memory.compression import pipeline

    sessions = set(future_rows_repair())
    sessions.update(pipeline.events_reclaim_stale())
    sessions.update(
        pipeline.sessions_with_pending_events(older_than_seconds=pending_older_than_seconds)
    )
    for session_pk in sorted(sessions):
        session_events_process_task(session_pk)
    return sorted(sessions)


@db_periodic_task(crontab(minute="*"))
@registered_in("memory.tasks")
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
