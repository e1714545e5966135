from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from memory.briefing.savings import savings
from memory.briefing.savings_text import stats_json, stats_lines
from memory.management.arguments import VERB_HELP, add_stats_arguments


class Command(BaseCommand):
    help = VERB_HELP["stats"]

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_stats_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        found = savings(project=options["project"], days=max(1, options["days"]))
        if options["json"]:
            self.stdout.write(json.dumps(stats_json(found), indent=2))
            return
        for line in stats_lines(found, by=options["by"], sessions=options["sessions"]):
            self.stdout.write(line)
