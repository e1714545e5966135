from __future__ import annotations

from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the huey tasks in the web process and the consumer: spool draining, and
        # the nightly raw-payload retention job (memory/housekeeping/retention.py).
        from memory import retention_tasks, spool_tasks  # noqa: F401
