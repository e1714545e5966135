from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.worker import lifecycle
from memory.worker import state as worker


class Command(BaseCommand):
    help = "Stop the background cmem worker and check that nothing of it is left running."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--timeout", type=float, default=20.0, help="Seconds before escalating to SIGKILL."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = lifecycle.worker_stop(timeout=options["timeout"])
        except worker.WorkerError as exc:
            raise CommandError(str(exc)) from None
        for note in result.notes:
            self.stdout.write(f"cmem: {note}")
        if result.was_running:
            self.stdout.write(f"cmem stopped (pid {result.pid}).")
        else:
            self.stdout.write("cmem is not running.")
