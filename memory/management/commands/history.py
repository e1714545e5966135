from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from memory.curation import history
from memory.management.commands._curation import FAILURES, describe, failure, obs_id
from memory.models import ObservationRevision

SHOWN = 60  # characters of a changed value: the history is an index, `cmem show` has the text


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def _who(revision: ObservationRevision) -> str:
    who = ObservationRevision.Actor(revision.actor).label
    return f"{who} ({revision.user.get_username()})" if revision.user else who


class Command(BaseCommand):
    help = "Every change of a memory, oldest first: what, who (you, the agent, consolidation), why; with the agent's proposals."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("id", type=obs_id, help="The memory's id.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            row = history.observation_visible(options["id"])
        except FAILURES as exc:
            raise failure(exc) from None
        self.stdout.write(f"{describe(row)} · {row.project}")
        revisions = history.history_of(row)
        if not revisions:
            self.stdout.write("  No changes since it was recorded.")
            return
        for revision in revisions:
            self.write_revision(revision)
        self.stdout.write("Undo a change with `cmem undo REVISION`.")

    def write_revision(self, revision: ObservationRevision) -> None:
        when = revision.created.strftime("%Y-%m-%d %H:%M")
        line = f"  {revision.pk:>5}  {when}  {revision.action:<18} {_who(revision)}"
        if revision.reason:
            line += f": {_short(revision.reason)}"
        if revision.undone:
            line += f"  [undone {revision.undone:%Y-%m-%d %H:%M}]"
        if revision.action.startswith("propose_"):
            line += "  [a proposal for you]"
        self.stdout.write(line)
        if revision.action == "remember":
            return  # its `after` is the whole new row: the header line already shows it
        for field, old in revision.before.items():
            new = revision.after.get(field)
            self.stdout.write(f"         {field}: {_short(old)} → {_short(new)}")
