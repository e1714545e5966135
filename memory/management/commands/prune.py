from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from memory import retention


class Command(BaseCommand):
    help = (
        "Empty the raw payloads of finished queue events older than CLAUDE_MEM_RETENTION_DAYS "
        "(observations and summaries are kept); --compact then VACUUMs the database."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--days", type=int, default=None, help="Override CLAUDE_MEM_RETENTION_DAYS (0 = keep forever).")
        parser.add_argument("--dry-run", action="store_true", help="Only report what would be emptied.")
        parser.add_argument("--compact", action="store_true", help="VACUUM afterwards to return the space.")

    def handle(self, *args: Any, **options: Any) -> None:
        report = retention.payloads_prune(days=options["days"], dry_run=options["dry_run"])
        self.stdout.write(report.describe())
        if options["compact"] and not options["dry_run"]:
            before, after = retention.database_compact()
            self.stdout.write(
                f"Compacted the database: {retention.human_bytes(before)} -> {retention.human_bytes(after)}."
            )
