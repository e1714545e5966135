from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.housekeeping import retention


class Command(BaseCommand):
    help = (
        "Empty the raw payloads of finished events older than CLAUDE_MEM_RETENTION_DAYS "
        "(observations and summaries are kept), then VACUUM the database and show its size."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--days",
            type=int,
            default=None,
            help="Override CLAUDE_MEM_RETENTION_DAYS (0 = keep forever).",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Only say what would be emptied."
        )
        parser.add_argument("--no-vacuum", action="store_true", help="Skip VACUUM.")
        # Accepted for scripts written against the first version, where VACUUM was opt-in.
        parser.add_argument("--compact", action="store_true", help="VACUUM (the default).")

    def handle(self, *args: Any, **options: Any) -> None:
        days = options["days"]
        if days is not None and days < 0:
            raise CommandError("--days must be 0 (keep forever) or more")
        report = retention.payloads_prune(days=days, dry_run=options["dry_run"])
        self.stdout.write(report.describe())
        if not (options["dry_run"] or options["no_vacuum"]):
            before, after = retention.database_compact()
            self.stdout.write(
                f"VACUUM: {retention.human_bytes(before)} -> {retention.human_bytes(after)}"
            )
        self.stdout.write(retention.database_growth().describe())
