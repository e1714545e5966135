"""Search by meaning's huey task: the background sweep that embeds what lacks a vector."""

from __future__ import annotations

from huey import crontab
from huey.contrib.djhuey import db_periodic_task

from memory.retrieval.embeddings import store as embeddings_store
from memory.runtime.task_names import registered_in

# One sweep embeds at most this many rows, so a model change re-embeds in the background
# over several minutes instead of holding the consumer for one long task.
EMBED_SWEEP_ROWS = 5000


@db_periodic_task(crontab(minute="*"))
@registered_in("memory.tasks")
def embeddings_sweep_task() -> None:
    """Vectors for rows that lack one of the configured model: imports, prompts of sessions
    with no compression yet, and every row after a model change."""
    embeddings_store.embed_pending(limit=EMBED_SWEEP_ROWS, skip_settled=True)
