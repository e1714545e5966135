from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.retrieval.timeline import TimelineError, timeline_build

MARKS = {"observation": "#", "summary": "#S", "prompt": "#P"}


class Command(BaseCommand):
    help = "What happened around an anchor (an observation id, S<id>, P<id>) or the best match of --query."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "anchor", nargs="?", help="123 (observation), S12 (summary), P7 (prompt)."
        )
        parser.add_argument(
            "--query", default=None, help="Anchor on the best match of this search."
        )
        parser.add_argument("--project", default=None, help="Only this project (with --query).")
        parser.add_argument("--depth", type=int, default=5, help="Items on each side (default 5).")
        parser.add_argument("--json", action="store_true", help="The same as GET /api/timeline.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            timeline = timeline_build(
                anchor=options["anchor"], query=options["query"], project=options["project"],
                depth_before=options["depth"], depth_after=options["depth"],
            )  # fmt: skip
        except TimelineError as exc:
            raise CommandError(str(exc)) from None
        if options["json"]:
            self.stdout.write(json.dumps(timeline.as_dict(), indent=2))
            return
        for item in timeline.items:
            pointer = ">" if item.is_anchor else " "
            ref = f"{MARKS[item.kind]}{item.id}"
            self.stdout.write(
                f"{pointer} {ref:<8} {item.created_at:%Y-%m-%d %H:%M}  {item.type:<10} {item.title[:90]}"
            )
