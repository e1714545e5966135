from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from memory.curation.corrections import revision_undo
from memory.management.commands._curation import FAILURES, cli_actor, describe, failure, obs_id


class Command(BaseCommand):
    help = "Undo one change of a memory (a revision number from `cmem history ID`)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("revision", type=obs_id, help="The revision, from `cmem history`.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            row = revision_undo(options["revision"], actor=cli_actor(self.stderr))
        except FAILURES as exc:
            raise failure(exc) from None
        self.stdout.write(f"Undid revision {options['revision']}: {describe(row)}.")
