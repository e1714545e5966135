from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from memory.management.commands._curation import MarkCommand, obs_id


class Command(MarkCommand):
    help = (
        "Correct a memory: mark it wrong (say why), outdated, or superseded by the memory that "
        "replaces it. Kept and labelled, never deleted; `cmem history ID` shows it and undoes it."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("id", type=obs_id, help="The memory's id.")
        how = parser.add_mutually_exclusive_group(required=True)
        how.add_argument("--wrong", metavar="REASON", help="It was never true: why.")
        how.add_argument(
            "--outdated", metavar="REASON", nargs="?", const="", help="It was true, no longer."
        )
        how.add_argument(
            "--superseded-by", metavar="ID2", type=obs_id, help="The memory that replaces it."
        )
        parser.add_argument("--reason", default="", help="Why (with --superseded-by).")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["wrong"] is not None:
            self.mark(options["id"], "wrong", reason=options["wrong"])
        elif options["outdated"] is not None:
            self.mark(options["id"], "outdated", reason=options["outdated"] or options["reason"])
        else:
            self.mark(
                options["id"],
                "supersede",
                reason=options["reason"],
                superseded_by=options["superseded_by"],
            )
