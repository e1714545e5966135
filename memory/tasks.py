"""Every huey task of cmem, gathered for huey: each room keeps its tasks beside what they run.

djhuey autodiscovers `<app>.tasks`, and `MemoryConfig.ready()` imports this module as
well, so the web process (which enqueues) and the consumer (which runs) know the same
tasks. Each task takes ids and calls one service of its room:

- memory/compression/tasks.py: compress a session's events; the sweep that re-enqueues
  sessions whose consumer vanished;
- memory/retrieval/embeddings/tasks.py: embed what lacks a vector;
- memory/hooks/tasks.py: drain the spool the hook client wrote while the worker was down;
- memory/housekeeping/tasks.py: the nightly retention job;
- memory/curation/tasks.py: the consolidation pass, every CLAUDE_MEM_CONSOLIDATE_EVERY_HOURS;
- memory/travel/sync/tasks.py: the automatic `cmem sync` (a schedule, SessionEnd), off by default.

The tasks keep the names huey first registered them under (memory/runtime/task_names.py):
a message queued before an upgrade still finds its task after it.
"""

from __future__ import annotations

from memory.compression.tasks import (
    events_sweep_on_start,
    events_sweep_task,
    session_events_process_task,
)
from memory.curation.tasks import consolidation_task
from memory.hooks.tasks import (
    spool_ingest_at_start,
    spool_ingest_periodic_task,
    spool_ingest_task,
)
from memory.housekeeping.tasks import retention_task
from memory.retrieval.embeddings.tasks import embeddings_sweep_task
from memory.travel.sync.tasks import sync_scheduled_task, sync_task

__all__ = [
    "consolidation_task",
    "embeddings_sweep_task",
    "events_sweep_on_start",
    "events_sweep_task",
    "retention_task",
    "session_events_process_task",
    "spool_ingest_at_start",
    "spool_ingest_periodic_task",
    "spool_ingest_task",
    "sync_scheduled_task",
    "sync_task",
]
