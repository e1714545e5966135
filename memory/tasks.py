"""Huey tasks: take ids, call one service. Placeholder until issue 4 lands."""

from __future__ import annotations

from huey.contrib.djhuey import db_task


@db_task()
def session_events_process_task(session_pk: int) -> None:
    """Compress a session's pending events (observations in batches, then summaries)."""
