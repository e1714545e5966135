from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.models import Observation
from memory.retrieval.render import observation_body


def observation_text(obs: dict[str, Any]) -> str:
    """One observation in full, the way `cmem show` prints it."""
    lines = [
        f"#{obs['id']} [{obs['type']}] {obs['title']}",
        f"project {obs['project']} · {obs['created_at'][:16].replace('T', ' ')} · session {obs['session']}"
        + (f" · {obs['tool_name']}" if obs.get("tool_name") else ""),
    ]
    return "\n".join([*lines, *observation_body(obs)])


class Command(BaseCommand):
    help = (
        "Print observations in full (title, narrative, facts, files, concepts), in the order given."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("ids", nargs="+", help="Observation ids, e.g. 12 15 (# optional).")
        parser.add_argument("--json", action="store_true", help="Print one JSON object instead.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            wanted = [int(str(raw).lstrip("#")) for raw in options["ids"]]
        except ValueError:
            raise CommandError(
                "observation ids are whole numbers, e.g. `cmem show 12 15`"
            ) from None
        found = {obs.pk: obs.as_dict() for obs in Observation.objects.filter(pk__in=wanted)}
        ordered = [found[pk] for pk in dict.fromkeys(wanted) if pk in found]
        missing = [pk for pk in dict.fromkeys(wanted) if pk not in found]
        if options["json"]:
            self.stdout.write(json.dumps({"observations": ordered, "missing": missing}, indent=2))
        elif ordered:
            self.stdout.write("\n\n".join(observation_text(obs) for obs in ordered))
        if missing:
            raise CommandError(f"no observation with id {', '.join(map(str, missing))}")
