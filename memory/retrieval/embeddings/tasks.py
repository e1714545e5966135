"""Search by meaning's huey task: the background sweep that embeds what lacks a vector."""

from __future__ import annotations

from django.db import connection
from huey import crontab
from huey.contrib.djhuey import db_periodic_task

from memory.retrieval.embeddings import installed, vector_index
from memory.retrieval.embeddings import store as embeddings_store
from memory.runtime.task_names import registered_in

# One sweep embeds for at most this long (the batch under way finishes), then the next
# minute's sweep goes on: an import or a model change is embedded in the background, about
# 45 s of one core a minute, without holding a consumer thread for one long task (the
# other thread keeps compressing).
EMBED_SWEEP_SECONDS = 45.0


@db_periodic_task(crontab(minute="*"))
@registered_in("memory.tasks")
def embeddings_sweep_task() -> None:
    """Vectors for rows that lack one of the configured model: imports, prompts of sessions
    with no compression yet, and every row after a model change; then the on-disk copies
    brought up to date, so that no search waits for one to be written."""
    embeddings_store.embed_pending(seconds=EMBED_SWEEP_SECONDS, skip_settled=True)
    if installed() and connection.vendor == "sqlite":
        vector_index.prepare_copies()
