from __future__ import annotations

import webbrowser
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.runtime.credentials import owner_login_url
from memory.worker import lifecycle
from memory.worker import state as worker


class Command(BaseCommand):
    help = "Open the web app in a browser, logged in with a one-time link (starts the worker)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("path", nargs="?", default="/", help="Page to open, e.g. /work/.")
        parser.add_argument(
            "--print", action="store_true", help="Only print the link, open no browser."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            state = lifecycle.worker_start().state
        except worker.WorkerError as exc:
            raise CommandError(str(exc)) from None
        path = options["path"] if str(options["path"]).startswith("/") else "/"
        url = owner_login_url(state.address.url, path)
        self.stdout.write(url)
        if not options["print"]:
            webbrowser.open(url)
