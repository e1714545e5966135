from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    """`cmem migrate`: Django's migrate without its prompts and flags (`cmem manage migrate`
    has them all)."""

    help = "Create or update the database tables (safe to run again; `cmem serve` does it too)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("app_label", nargs="?", help="Only this app (memory, deliverables).")
        parser.add_argument("migration_name", nargs="?", help="Migrate to this migration.")
        # Accepted for scripts written for Django's migrate; cmem's never asks anything.
        parser.add_argument("--noinput", "--no-input", action="store_true", help="(the default)")
        parser.add_argument("--plan", action="store_true", help="Only list what would run.")

    def handle(self, *args: Any, **options: Any) -> None:
        labels = [x for x in (options["app_label"], options["migration_name"]) if x]
        call_command(
            "migrate",
            *labels,
            interactive=False,
            plan=options["plan"],
            verbosity=options["verbosity"],
            stdout=self.stdout,
            stderr=self.stderr,
        )
