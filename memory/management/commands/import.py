from __future__ import annotations

import importlib
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from memory.importers.report import ImportReport
from memory.travel.frontmatter import MarkdownImportError

# `cmem import <source> …`: each source is a module with `HELP`, `add_arguments(parser)` and
# `import_from(*, options, report, progress) -> ImportReport`, where `progress(total)` returns
# a callable that advances the bar by one. Add a source by adding a line here.
IMPORTERS = {
    "claude-code": "memory.importers.claude_code",
    "claude-mem": "memory.importers.claude_mem",
    "codex": "memory.importers.codex",
    "json": "memory.importers.json_io",
    "markdown": "memory.travel.merge",
}


class Command(BaseCommand):
    help = "Import history: Claude Code transcripts, a claude-mem database, a cmem JSON export or a Markdown tree."

    def add_arguments(self, parser: ArgumentParser) -> None:
        sources = parser.add_subparsers(dest="source", required=True, metavar="SOURCE")
        for name, path in IMPORTERS.items():
            module = importlib.import_module(path)
            sub = sources.add_parser(name, help=module.HELP, description=module.HELP)
            module.add_arguments(sub)

    def handle(self, *args: Any, **options: Any) -> None:
        module = importlib.import_module(IMPORTERS[options["source"]])
        report = ImportReport()
        console = Console(stderr=True)
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            # A 100k-row history takes minutes: show how long so far and how long to go.
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        ) as bar:

            def progress(total: int, label: str = "importing") -> Any:
                task = bar.add_task(label, total=total)
                return lambda: bar.advance(task)

            try:
                module.import_from(options=options, report=report, progress=progress)
            except MarkdownImportError as exc:
                # A bad file in a tree: refused whole, nothing written (exit 2, as for usage).
                raise CommandError(str(exc), returncode=2) from exc
            except (OSError, ValueError) as exc:
                raise CommandError(str(exc)) from exc
        self.stdout.write(f"cmem import {options['source']}: done")
        for line in report.lines() or ["nothing to import"]:
            self.stdout.write("  " + line)
