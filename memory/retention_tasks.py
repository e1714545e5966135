"""The nightly retention job (imported by `MemoryConfig.ready()` so the consumer knows it)."""

from __future__ import annotations

from huey import crontab
from huey.contrib.djhuey import db_periodic_task

from memory.housekeeping.retention import retention_run


@db_periodic_task(crontab(minute="17", hour="4"))
def retention_task() -> None:
    retention_run()
