from __future__ import annotations

from argparse import ArgumentParser
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils.dateparse import parse_datetime

from memory.housekeeping.forget import ForgetError, ForgetRequest, ForgetResult, observations_forget


def _when(raw: str | None) -> datetime | None:
    if not raw:
        return None
    value = parse_datetime(raw) or parse_datetime(raw + "T00:00:00")
    if value is None:
        raise CommandError(f"{raw!r} is not a date (use 2026-03-01 or 2026-03-01T09:30)")
    return value


class Command(BaseCommand):
    help = "Delete observations by ids, query, project or date range. Shows what would go unless --yes."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("query", nargs="*", help="Observations matching this search.")
        parser.add_argument("--ids", default="", help="Observation ids, comma-separated.")
        parser.add_argument(
            "--query", dest="query_option", default="", help="The same as the positional QUERY."
        )
        parser.add_argument("--project", default=None)
        parser.add_argument("--since", default=None, help="ISO date or datetime (inclusive).")
        parser.add_argument("--until", default=None, help="ISO date or datetime (inclusive).")
        parser.add_argument(
            "--kinds",
            default="observation",
            help="observation,summary,prompt (ids always name observations).",
        )
        parser.add_argument(
            "--yes", action="store_true", help="Really delete (default: a dry run)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            ids = tuple(int(part) for part in options["ids"].split(",") if part.strip())
        except ValueError as exc:
            raise CommandError(f"--ids takes whole numbers separated by commas ({exc})") from exc
        request = ForgetRequest(
            ids=ids, query=" ".join([*options["query"], options["query_option"]]).strip(), project=options["project"], since=_when(options["since"]), until=_when(options["until"]),
            kinds=tuple(k.strip() for k in options["kinds"].split(",") if k.strip()), dry_run=not options["yes"],  # type: ignore[arg-type]
        )  # fmt: skip
        try:
            result = observations_forget(request=request)
        except ForgetError as exc:
            raise CommandError(str(exc)) from exc
        self.write_result(result)
        found = {row["id"] for row in result.rows.get("observation", [])}
        missing = [pk for pk in dict.fromkeys(ids) if pk not in found]
        if missing:
            self.stdout.write(f"No observation with id {', '.join(map(str, missing))}.")

    def write_result(self, result: ForgetResult) -> None:
        for kind, rows in result.rows.items():
            for row in rows:
                self.stdout.write(
                    f"  {kind} #{row['id']}  {row['created_at'][:16]}  {row['project']}  {row['title'][:80]}"
                )
        if result.dry_run:
            hint = " Run again with --yes to delete them." if result.count else ""
            self.stdout.write(f"Would delete {result.count} row(s).{hint}")
        else:
            self.stdout.write(f"Deleted {result.count} row(s).")
