from __future__ import annotations

import json
import shutil
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from memory.retrieval.search.query import KINDS, MODES, SearchHit, SearchQuery
from memory.retrieval.search.service import effective_mode, mode_note, search

MARKS = {"observation": "#", "summary": "#S", "prompt": "#P"}


def hit_rows(hits: list[SearchHit], *, width: int) -> list[str]:
    """Aligned columns (id, when, type, project, tokens, title) cut to `width` characters:
    the title takes what the others leave, so a narrow terminal never wraps a row."""
    cells = [
        (
            f"{MARKS[h.kind]}{h.id}",
            f"{h.created_at:%Y-%m-%d %H:%M}",
            h.type,
            h.project,
            f"~{h.tokens}",
        )
        for h in hits
    ]
    header = ("id", "when", "type", "project", "tokens")
    widths = [max(len(row[i]) for row in [header, *cells]) for i in range(len(header))]
    widths[3] = min(widths[3], 20)  # a long project name must not squeeze the title away

    def line(row: tuple[str, ...], title: str) -> str:
        left = "  ".join(
            (cell[: widths[i] - 1] + "…" if len(cell) > widths[i] else cell).ljust(widths[i])
            if i != 4
            else cell.rjust(widths[i])
            for i, cell in enumerate(row)
        )
        room = max(10, width - len(left) - 2)
        return f"{left}  {title if len(title) <= room else title[: room - 1] + '…'}".rstrip()

    return [
        line(header, "title"),
        *(line(row, h.title) for row, h in zip(cells, hits, strict=True)),
    ]


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
            "--json", action="store_true", help="The hits as JSON (as /api/search)."
        )
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
        note = mode_note(query.mode, query.kinds)
        if options["json"]:
            out = {"mode": effective_mode(query.mode), "note": note}
            self.stdout.write(json.dumps({**out, "results": [h.as_dict() for h in hits]}, indent=2))
            return
        if note:
            self.stderr.write(f"cmem: {note}")
        if hits:
            width = shutil.get_terminal_size((100, 24)).columns
            for row in hit_rows(hits, width=width):
                self.stdout.write(row)
        self.stdout.write(f"{len(hits)} result(s). Full text: `cmem show ID…`.")
