from __future__ import annotations

import json
import shutil
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from memory.management.arguments import VERB_HELP, add_search_arguments
from memory.management.verb_text import search_lines
from memory.retrieval.search.query import KINDS, SearchQuery
from memory.retrieval.search.service import effective_mode, mode_note, search


class Command(BaseCommand):
    help = VERB_HELP["search"]

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_search_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        kinds = tuple(k for k in options["kind"].split(",") if k in KINDS) or KINDS
        query = SearchQuery(
            text=" ".join(options["text"]), project=options["project"], kinds=kinds,  # type: ignore[arg-type]
            types=tuple(t for t in options["type"].split(",") if t), file=options["file"], concept=options["concept"],
            limit=max(1, options["limit"]), mode=options["mode"],
        )  # fmt: skip
        hits = search(query)
        note = mode_note(query.mode, query.kinds)
        if options["json"]:
            out = {"mode": effective_mode(query.mode), "note": note}
            self.stdout.write(json.dumps({**out, "results": [h.as_dict() for h in hits]}, indent=2))
            return
        if note:
            self.stderr.write(f"cmem: {note}")
        width = shutil.get_terminal_size((100, 24)).columns
        for line in search_lines([h.as_dict() for h in hits], words=query.text, width=width):
            self.stdout.write(line)
