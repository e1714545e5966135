"""The memory app: connects its signals and registers its huey tasks at startup."""

from __future__ import annotations

from django.apps import AppConfig


class MemoryConfig(AppConfig):
    name = "memory"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers every huey task (compression, spool draining, the nightly retention
        # job) in the web process and the consumer alike; in ready(), as the tasks import
        # models, which load only once the app registry is ready.
        from memory import extensions, tasks  # noqa: F401
        from memory.travel.sync.tasks import on_session_ended

        # The automatic sync at SessionEnd (capture sends, sync listens: capture never
        # imports sync).
        extensions.session_ended_connect(on_session_ended)
