from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from memory.retrieval.search.query import KINDS, MODES, SearchQuery
from memory.retrieval.search.service import search


class Command(BaseCommand):
    help = "Search memory (observations, summaries, prompts) and print the index, best match first."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("text", nargs="*", help='Words; "a phrase"; word* for a prefix.')
        parser.add_argument("--project", default=None)
        parser.add_argument("--type", default="", help="Observation types, comma-separated.")
        parser.add_argument(
            "--kind", default="", help="observation, summary, prompt (comma-separated)."
        )
        parser.add_argument("--file", default=None)
        parser.add_argument("--concept", default=None)
        parser.add_argument("--limit", type=int, default=20)
        parser.add_argument(
            "--mode",
            choices=MODES,
            default="hybrid",
            help="keyword (words), semantic (meaning) or hybrid (both, fused; the default).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        kinds = tuple(k for k in options["kind"].split(",") if k in KINDS) or KINDS
        query = SearchQuery(
            text=" ".join(options["text"]), project=options["project"], kinds=kinds,  # type: ignore[arg-type]
            types=tuple(t for t in options["type"].split(",") if t), file=options["file"], concept=options["concept"],
            limit=max(1, options["limit"]), mode=options["mode"],
        )  # fmt: skip
        hits = search(query)
        for hit in hits:
            mark = {"observation": "#", "summary": "#S", "prompt": "#P"}[hit.kind]
            self.stdout.write(
                f"{mark}{hit.id:<6} {hit.created_at:%Y-%m-%d %H:%M}  {hit.type:<10} {hit.title[:90]}  (~{hit.tokens} tokens)"
            )
        self.stdout.write(f"{len(hits)} result(s).")
