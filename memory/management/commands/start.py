from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.runtime.credentials import owner_login_url
from memory.worker import lifecycle
from memory.worker import state as worker


class Command(BaseCommand):
    help = "Start the cmem worker in the background and wait until it answers."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--timeout", type=float, default=60.0, help="Seconds to wait for /api/health."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = lifecycle.worker_start(timeout=options["timeout"])
        except worker.WorkerError as exc:
            raise CommandError(str(exc)) from None
        for note in result.notes:
            self.stdout.write(f"cmem: {note}")
        state = result.state
        version = (state.health or {}).get("version", "?")
        # The URL logs this browser in once (memory/access/owner_auth.py); `cmem open` makes another.
        login = owner_login_url(state.address.url)
        if result.already_running:
            self.stdout.write(f"cmem {version} is already running: {login} (pid {state.pid})")
        else:
            self.stdout.write(f"cmem {version} started: {login} (pid {state.pid})")
            self.stdout.write(f"logs: {worker.log_dir()}  (cmem logs -f)")
