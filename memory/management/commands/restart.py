from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.worker import lifecycle
from memory.worker import state as worker


class Command(BaseCommand):
    help = "Stop the background cmem worker (if running) and start it again."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--timeout", type=float, default=60.0, help="Seconds to wait for /api/health."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            stopped = lifecycle.worker_stop()
            result = lifecycle.worker_start(timeout=options["timeout"])
        except worker.WorkerError as exc:
            raise CommandError(str(exc)) from None
        for note in stopped.notes + result.notes:
            self.stdout.write(f"cmem: {note}")
        state = result.state
        version = (state.health or {}).get("version", "?")
        verb = "restarted" if stopped.was_running else "started"
        self.stdout.write(f"cmem {version} {verb}: {state.address.url}/ (pid {state.pid})")
