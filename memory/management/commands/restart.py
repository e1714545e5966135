from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.management import worker_verbs
from memory.management.arguments import VERB_HELP, add_start_arguments


class Command(BaseCommand):
    help = VERB_HELP["restart"]

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_start_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            worker_verbs.restart(options, self.stdout.write)
        except worker_verbs.VerbError as exc:
            raise CommandError(str(exc)) from None
