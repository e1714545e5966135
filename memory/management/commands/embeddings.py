"""`cmem embeddings backfill|status`: vectors for rows lacking one of the configured model."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from rich.progress import Progress

from memory.retrieval import embeddings
from memory.retrieval.embeddings import INSTALL_HINT, KINDS, store
from memory.retrieval.embeddings.model import get_model


class Command(BaseCommand):
    help = (
        "Embeddings for search by meaning. `backfill` embeds every row lacking a vector of the "
        "configured model (resumable: a killed run continues where it stopped); `status` counts them."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("action", choices=["backfill", "status"])
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")

    def handle(self, *args: Any, **options: Any) -> None:
        if embeddings.missing():
            raise CommandError(
                f"search by meaning is not installed ({', '.join(embeddings.missing())} missing): {INSTALL_HINT}"
            )
        model = get_model()
        pending = {kind: store.pending_count(kind, model.version) for kind in KINDS}
        if options["action"] == "status":
            for kind, count in pending.items():
                self.stdout.write(f"{kind}: {count} without a {model.version} vector")
            return
        total = sum(pending.values())
        with Progress(disable=options["no_progress"], transient=False) as progress:
            task = progress.add_task(f"embedding ({model.version})", total=total)
            done = store.embed_pending(progress=lambda _kind, n: progress.advance(task, n))
        self.stdout.write(f"embedded {done} row(s) with {model.version}.")
