from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.curation.consolidation.run import ConsolidationError, consolidation_run


class Command(BaseCommand):
    help = (
        "Run the consolidation pass now: fold near-duplicates, supersede reversed decisions, "
        "abandon refuted hypotheses, demote memories never recalled. Every change can be "
        "undone on the consolidation page; --dry-run only prints what it would do."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Print the changes it would make; change nothing, ask no model.",
        )
        parser.add_argument("--project", default=None, help="Only this project.")
        parser.add_argument(
            "--mode",
            choices=("rules", "model"),
            default=None,
            help="rules (offline) or model (the observer's provider); default: CLAUDE_MEM_CONSOLIDATE.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = consolidation_run(
                project=options["project"] or None,
                mode=options["mode"],
                dry_run=options["dry_run"],
            )
        except ConsolidationError as exc:
            raise CommandError(str(exc)) from None
        for line in report.lines():
            self.stdout.write(line)
