from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from memory.service import lifecycle
from memory.service import worker_state as worker
from memory.service.supervisor import Supervisor


class Command(BaseCommand):
    help = "Run the cmem worker (web server + huey consumer) in the foreground."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--no-migrate", action="store_true", help="Skip applying migrations first."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        address = worker.worker_address()
        state = lifecycle.worker_state()
        running = state.health if state.running else worker.health(address)
        if running:
            # Not an error: `make run` twice, or serve after start, finds what it wanted. The
            # pid is the supervisor's (the pid file's), the one `cmem status` names.
            pid = state.pid if state.running else running.get("pid")
            self.stdout.write(
                f"cmem {running.get('version')} is already running: {state.address.url if state.running else address.url}/ (pid {pid})"
            )
            return
        if not worker.port_is_free(address):
            raise CommandError(
                f"port {address.port} on {address.host} is held by another program, not cmem. "
                "Stop it, or choose another port with CLAUDE_MEM_WORKER_PORT."
            )
        if not options["no_migrate"]:
            call_command("migrate", interactive=False, verbosity=0)
        try:
            Supervisor(address, out=self.stdout).run()
        except worker.WorkerError as exc:
            raise CommandError(str(exc)) from None
