from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from memory.importers.json_io import export_write, memory_export
from memory.team.scope import viewer_scope
from memory.travel.markdown import export_markdown


class Command(BaseCommand):
    help = "Write sessions, prompts, observations, files, summaries and deliverable metadata to JSON (FILE, or - for stdout), or as Markdown files (--format markdown DIR)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "file",
            help="Where to write the export; - for stdout. With --format markdown: a folder.",
        )
        parser.add_argument(
            "--format",
            choices=("json", "markdown"),
            default="json",
            help="json: one document (the default); markdown: one file per memory, for editors and Obsidian.",
        )
        parser.add_argument("--project", default="", help="Only this project.")
        parser.add_argument(
            "--user",
            default="",
            help="Team mode: only what this user's token may export (their own sessions).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["user"]:
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"no user named {options['user']!r}")
            with viewer_scope(user_id=user.pk, staff=user.is_staff):
                self.export(options)
        else:
            self.export(options)

    def export(self, options: dict[str, Any]) -> None:
        if options["format"] == "markdown":
            if options["file"] == "-":
                raise CommandError("a Markdown export is a folder: name one, not -")
            root = Path(options["file"]).expanduser()
            written = export_markdown(root, project=options["project"])
            self.stdout.write(f"exported to {root}: {written} files written")
            return
        document = memory_export(project=options["project"])
        export_write(document=document, path=options["file"])
        sessions = document["sessions"]
        counts = {
            key: sum(len(s[key]) for s in sessions)
            for key in ("prompts", "observations", "summaries", "deliverables")
        }
        summary = ", ".join(f"{n} {key}" for key, n in counts.items())
        # With `-` the JSON owns stdout; the summary goes to stderr so the output stays valid.
        (self.stderr if options["file"] == "-" else self.stdout).write(
            f"exported {len(sessions)} sessions, {summary}"
        )
