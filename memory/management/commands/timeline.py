from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.management.arguments import VERB_HELP, add_timeline_arguments
from memory.management.verb_text import timeline_line
from memory.retrieval.timeline import TimelineError, TimelineNotFound, timeline_build


class Command(BaseCommand):
    help = VERB_HELP["timeline"]

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_timeline_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            timeline = timeline_build(
                anchor=options["anchor"], query=options["query"], project=options["project"],
                depth_before=options["depth"], depth_after=options["depth"],
            )  # fmt: skip
        except TimelineNotFound as exc:
            raise CommandError(str(exc)) from None
        except TimelineError as exc:  # no anchor, or one that is not an id: a usage error
            raise CommandError(str(exc), returncode=2) from None
        if options["json"]:
            self.stdout.write(json.dumps(timeline.as_dict(), indent=2))
            return
        for item in timeline.as_dict()["items"]:
            self.stdout.write(timeline_line(item))
