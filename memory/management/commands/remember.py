from __future__ import annotations

import os
import sys
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.curation.remember import KINDS, RememberRequest, remember
from memory.management.commands._curation import FAILURES, cli_actor, describe, failure
from memory.models import Observation
from memory.projects import is_excluded, project_for_cwd


class Command(BaseCommand):
    help = (
        "Remember something no file shows: a decision, a preference, a confirmed conclusion. "
        "It goes into the project of the current folder (or --project) and is briefed to the "
        "agent at the start of its sessions. A --topic makes it replace the topic's memory."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("title", help="One line: what to remember.")
        parser.add_argument(
            "text", nargs="?", default="", help="The detail: why, the evidence (- reads stdin)."
        )
        parser.add_argument("--kind", choices=KINDS, default=Observation.Type.NOTE)
        parser.add_argument(
            "--topic", default="", help="A short key; remembering it again replaces the memory."
        )
        parser.add_argument(
            "--file",
            dest="files",
            action="append",
            default=[],
            metavar="F",
            help="A file it is about (repeat for more).",
        )
        parser.add_argument(
            "--all-projects", action="store_true", help="Brief it in every project of yours."
        )
        parser.add_argument("--project", default=None, help="Default: the current folder's.")

    def handle(self, *args: Any, **options: Any) -> None:
        text = sys.stdin.read() if options["text"] == "-" else options["text"]
        project, root = self.project(options["project"])
        try:
            result = remember(RememberRequest(
                project=project, title=options["title"], text=text, kind=options["kind"],
                topic=options["topic"], files=tuple(options["files"]),
                scope=Observation.Scope.ALL if options["all_projects"] else Observation.Scope.PROJECT,
                actor=cli_actor(self.stderr), project_root=root,
            ))  # fmt: skip
        except FAILURES as exc:
            raise failure(exc) from None
        row = result.observation
        if not result.created:
            self.stdout.write(f"Already remembered: {describe(row)}; nothing changed.")
            return
        self.stdout.write(f"Remembered {describe(row)} in {row.project}.")
        if result.superseded is not None:
            self.stdout.write(f"It replaces #{result.superseded.pk} (topic {row.topic!r}).")
        if result.proposals:
            self.stdout.write(
                "All projects was proposed to the user, not applied: it is for this project only."
            )

    def project(self, named: str | None) -> tuple[str, str]:
        """(project, root): --project as given, else the current folder's project."""
        if named is not None:
            if not named.strip():
                raise CommandError("--project is empty: name a project, or leave it out")
            return named.strip(), ""
        cwd = os.getcwd()
        found = project_for_cwd(cwd)
        if is_excluded(cwd, found):
            raise CommandError(f"{cwd} is excluded from memory; name a project with --project")
        return found.name, found.root
