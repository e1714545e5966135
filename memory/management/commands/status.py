from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand
from django.db import DatabaseError

from memory import config
from memory.compression.providers import OFFLINE, module, provider_choice
from memory.retrieval import embeddings
from memory.retrieval.embeddings import store as embeddings_store
from memory.worker import lifecycle
from memory.worker import state as worker

# LSB init-script convention: 3 = "program is not running", so scripts can branch on it.
NOT_RUNNING = 3


def format_duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d {hours}h {minutes}m"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs}s"


def observer_sources() -> dict[str, str]:
    """The observer's provider and where its key and base URL come from, as settings.json and
    this process's environment give them (secrets are never printed, only their source)."""
    choice = provider_choice()
    sources = (
        {"key": "none", "base_url": "none"}
        if choice.name == OFFLINE
        else module(choice.name).sources(choice.name)
    )
    return {"provider": choice.name, "why": choice.why, **sources}


def search_modes() -> dict[str, Any]:
    """Whether search by meaning is installed (the embeddings extra) in this environment, and
    how many rows still wait for a vector (None: the database cannot be read yet)."""
    out: dict[str, Any] = {
        "semantic": embeddings.available(),
        "note": embeddings.unavailable_note(),
    }
    if out["semantic"]:
        try:
            out["waiting_for_vector"] = embeddings_store.waiting()
        except DatabaseError:  # a data dir never migrated: nothing waits that could be counted
            out["waiting_for_vector"] = None
    return out


class Command(BaseCommand):
    help = "Say whether the cmem worker runs, with pid, URL, version, uptime and pending work."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print one JSON object instead.")

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
            self._write_text(state, pending)
            observer = observer_sources()
            self.stdout.write(f"  observer {observer['provider']} ({observer['why']})")
            self.stdout.write(f"    key      from {observer['key']}")
            self.stdout.write(f"    base URL from {observer['base_url']}")
            search = search_modes()
            if search["semantic"]:
                waiting = search.get("waiting_for_vector")
                tail = (
                    f" ({waiting:,} row(s) wait for a vector, embedded in the background)"
                    if waiting
                    else ""
                )
                self.stdout.write(f"  search   hybrid: words and meaning{tail}")
            else:
                self.stdout.write(f"  search   keyword only: {search['note']}")
        if not state.running:
            raise SystemExit(NOT_RUNNING)

    def _write_text(self, state: lifecycle.WorkerState, pending: object) -> None:
        if not state.running:
            self.stdout.write("cmem is not running.")
            if state.stale_reason:
                self.stdout.write(
                    f"  stale pid file: {state.stale_reason} (`cmem start` replaces it)"
                )
            return
        health = state.health or {}
        self.stdout.write("cmem is running.")
        self.stdout.write(f"  pid      {state.pid}")
        self.stdout.write(f"  url      {state.address.url}/")
        if health:
            self.stdout.write(f"  version  {health.get('version')}")
        else:
            self.stdout.write("  version  ? (the server does not answer yet; see `cmem logs`)")
        if state.uptime is not None:
            self.stdout.write(f"  uptime   {format_duration(state.uptime)}")
        self.stdout.write(f"  pending  {pending if pending is not None else '?'}")
        self.stdout.write(f"  data     {config.data_dir()}")
