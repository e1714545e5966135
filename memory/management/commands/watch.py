from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.management.arguments import VERB_HELP, add_watch_arguments
from memory.watch import loop


class Command(BaseCommand):
    help = VERB_HELP["watch"]

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_watch_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        code = loop.main(options)
        if code:
            raise CommandError("see the lines above", returncode=code)
