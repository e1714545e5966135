from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand
from django.db import DatabaseError

from memory import config
from memory.compression.providers import observer_sources
from memory.management.arguments import VERB_HELP, add_status_arguments
from memory.management.verb_text import (
    search_modes_here,
    status_head,
    status_tail,
)
from memory.retrieval.embeddings import store as embeddings_store
from memory.worker import lifecycle
from memory.worker import state as worker

# LSB init-script convention: 3 = "program is not running", so scripts can branch on it.
NOT_RUNNING = 3


def search_modes() -> dict[str, Any]:
    """Whether search by meaning is installed (the embeddings extra) in this environment, and
    how many rows still wait for a vector (None: the database cannot be read yet)."""
    out = search_modes_here()
    if out["semantic"]:
        try:
            out["waiting_for_vector"] = embeddings_store.waiting()
        except DatabaseError:  # a data dir never migrated: nothing waits that could be counted
            out["waiting_for_vector"] = None
    return out


class Command(BaseCommand):
    help = VERB_HELP["status"]

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_status_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        worker.worker_address()  # reads settings.json, recording what is wrong with it
        for problem in config.problems():
            self.stderr.write(f"settings: {problem}")
        state = lifecycle.worker_state()
        pending = None
        if state.running and state.health:
            pending = (worker.stats(state.address) or {}).get("pending")
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "running": state.running,
                        "pid": state.pid,
                        "url": state.address.url + "/",
                        "version": (state.health or {}).get("version"),
                        "answering": bool(state.health),
                        "uptime_seconds": None if state.uptime is None else round(state.uptime),
                        "pending": pending,
                        "stale": state.stale_reason or None,
                        "observer": observer_sources(),
                        "search": search_modes(),
                    }
                )
            )
        else:
            head = status_head(
                running=state.running, pid=state.pid, url=state.address.url,
                health=state.health, uptime=state.uptime, pending=pending,
                data_dir=config.data_dir(), stale_reason=state.stale_reason,
            )  # fmt: skip
            for line in [*head, *status_tail(observer_sources(), search_modes())]:
                self.stdout.write(line)
        if not state.running:
            raise SystemExit(NOT_RUNNING)
