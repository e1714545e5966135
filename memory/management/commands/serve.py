from __future__ import annotations

import os
import sys
from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from memory.runtime.credentials import owner_login_url
from memory.worker import lifecycle, schema_stamp
from memory.worker import state as worker
from memory.worker.supervisor import NEXT_STEPS_ENV


class Command(BaseCommand):
    help = "Run the cmem worker (web server + huey consumer) in the foreground."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--no-migrate", action="store_true", help="Skip applying migrations first."
        )
        parser.add_argument(
            "--ensure-admin",
            action="store_true",
            help="Also create the local admin login if there is none, and say how to log in "
            "(what `make run` does: one Django start instead of three).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        address = worker.worker_address()
        state = lifecycle.worker_state()
        running = state.health if state.running else worker.health(address)
        if running:
            # Not an error: `make run` twice, or serve after start, finds what it wanted. The
            # pid is the supervisor's (the pid file's), the one `cmem status` names.
            pid = state.pid if state.running else running.get("pid")
            url = state.address.url if state.running else address.url
            # A bare URL answers 403 (owner-only): a one-time login link, as `cmem open` makes.
            self.stdout.write(
                f"cmem {running.get('version')} is already running: {owner_login_url(url)} "
                f"(one-time login link; `cmem open` makes another) (pid {pid})"
            )
            return
        if not worker.port_is_free(address):
            raise CommandError(
                f"port {address.port} on {address.host} is held by another program, not cmem. "
                "Stop it, or choose another port with CLAUDE_MEM_WORKER_PORT."
            )
        database = settings.DATABASES["default"]
        if not options["no_migrate"] and not schema_stamp.is_current(database):
            call_command("migrate", interactive=False, verbosity=0)
            schema_stamp.record(database)
        if options["ensure_admin"]:
            call_command("ensure_admin")
            os.environ[NEXT_STEPS_ENV] = "1"  # the supervisor says what to do next
        # The supervisor only spawns, watches and signals: it needs no Django, so this
        # process becomes a lean one (same pid, so `cmem start` and the pid file still name
        # it) instead of keeping ~60 MB of Django resident for the worker's whole life.
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, [sys.executable, "-m", "cmem_site.cli", "serve", "--supervise"])
