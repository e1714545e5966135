from __future__ import annotations

import importlib
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

# Each benchmark is a module memory/benchmarks/<name>.py with
# `add_arguments(parser)` (optional) and `run(*, out, options) -> None`.
BENCHMARKS = [
    "lean",
    "worker",
    "hooks",
    "compress",
    "gate",
    "search",
    "outline",
    "load",
    "scale",
    "recall",
    "recall_pg",
    "vectors",
    "offline",
    "economy",
]


class Command(BaseCommand):
    help = "Run a benchmark and print its figures: " + ", ".join(BENCHMARKS) + ", or all."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("name", choices=[*BENCHMARKS, "all"])
        parser.add_argument("--quick", action="store_true", help="Smaller sizes, for a smoke run.")
        parser.add_argument("--size", type=int, default=None, help="Rows to seed where it applies.")
        parser.add_argument("--runs", type=int, default=None, help="Repetitions where it applies.")
        parser.add_argument(
            "--seconds", type=int, default=None, help="Soak length in seconds (bench load)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        names = BENCHMARKS if options["name"] == "all" else [options["name"]]
        for name in names:
            try:
                module = importlib.import_module(f"memory.benchmarks.{name}")
            except ModuleNotFoundError as exc:
                if options["name"] == "all":
                    self.stderr.write(f"bench {name}: not available ({exc})")
                    continue
                raise CommandError(f"bench {name} is not available: {exc}") from exc
            self.stdout.write(f"== bench {name} ==")
            module.run(out=self.stdout, options=options)
