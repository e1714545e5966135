"""Housekeeping's huey task: the nightly raw-payload job (memory/housekeeping/retention.py)."""

from __future__ import annotations

from huey import crontab
from huey.contrib.djhuey import db_periodic_task

from memory.housekeeping.retention import retention_run
from memory.runtime.task_names import registered_in


@db_periodic_task(crontab(minute="17", hour="4"))
@registered_in("memory.retention_tasks")
def retention_task() -> None:
    retention_run()
