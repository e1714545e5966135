from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.management.arguments import add_watch_arguments
from memory.watch import loop


class Command(BaseCommand):
    help = (
        "Follow the session files of an agent that writes its sessions to disk but runs no "
        "hooks (Continue CLI: ~/.continue/sessions/) and feed each new prompt, tool use and "
        "finished turn to the worker, like a hook. What was read is kept in the data dir's "
        "watch/ folder, so nothing is read twice. --once delivers what is new and exits; "
        "without it, it follows until stopped (the worker runs it when CLAUDE_MEM_WATCH is set)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_watch_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        code = loop.main(options)
        if code:
            raise CommandError("see the lines above", returncode=code)
