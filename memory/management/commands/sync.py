from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.travel.sync import crypto
from memory.travel.sync.engine import (
    SyncError,
    sync_configure,
    sync_run,
    sync_status,
)
from memory.travel.sync.state import SyncBusy


class Command(BaseCommand):
    help = (
        "Sync this machine's memory through a git remote you control: the remote's changes "
        "in (merged by global id, the later edit wins), this machine's out. The first time: "
        "`cmem sync --remote URL` (add --encrypt to seal every file)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--remote", default="", help="The git remote (remembered after).")
        parser.add_argument(
            "--encrypt", action="store_true", help="Seal every file with a key kept here."
        )
        parser.add_argument("--key", default="", help="The key of an encrypted remote.")
        parser.add_argument("--key-file", type=Path, help="A file holding that key.")
        parser.add_argument(
            "--dry-run", action="store_true", help="Say what would move; change nothing."
        )
        parser.add_argument(
            "--all",
            action="store_true",
            dest="everything",
            help="Offer every row, not only those changed since the last sync.",
        )
        parser.add_argument("--status", action="store_true", help="The remote and last sync.")
        parser.add_argument(
            "--export-key", action="store_true", help="Print the key for the next machine."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["status"]:
            for line in sync_status():
                self.stdout.write(line)
            return
        if options["export_key"]:
            self.export_key()
            return
        key = self.key_given(options)
        try:
            if options["remote"] and not options["dry_run"]:
                for said in sync_configure(
                    remote=options["remote"], encrypt=options["encrypt"], key=key
                ):
                    self.stdout.write(said)
            elif key or options["encrypt"]:
                raise CommandError("--key, --key-file and --encrypt go with --remote URL")
            report = sync_run(
                remote=options["remote"],
                dry_run=options["dry_run"],
                everything=options["everything"],
            )
        except (SyncError, SyncBusy) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(report.describe())

    def key_given(self, options: dict[str, Any]) -> str:
        if options["key_file"] is not None:
            try:
                return str(options["key_file"].read_text()).strip()
            except OSError as exc:
                raise CommandError(f"--key-file: {exc}") from None
        return str(options["key"]).strip()

    def export_key(self) -> None:
        text = crypto.key_text()
        if not text:
            raise CommandError("this machine has no sync key (`cmem sync --remote URL --encrypt`)")
        self.stdout.write(text)
