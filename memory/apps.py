from __future__ import annotations

from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the spool-draining huey tasks in the web process and the consumer.
        from memory import spool_tasks  # noqa: F401
        # The nightly raw-payload retention job (memory/retention.py).
        from memory import retention_tasks  # noqa: F401
