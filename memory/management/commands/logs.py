from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from memory.management import worker_verbs
from memory.management.arguments import VERB_HELP, add_logs_arguments
from memory.management.verb_text import tail_lines

__all__ = ["Command", "tail_lines"]  # tail_lines: where tests and older callers look for it


class Command(BaseCommand):
    help = VERB_HELP["logs"]

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_logs_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        worker_verbs.logs(options, self.stdout.write, self.stdout.flush)

    def follow(self, poll: float = 0.5, stop_after: float | None = None) -> None:
        """Print lines appended to any log until interrupted (or `stop_after` seconds)."""
        worker_verbs.logs_follow(
            self.stdout.write, self.stdout.flush, poll=poll, stop_after=stop_after
        )
