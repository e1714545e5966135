from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.models import Observation
from memory.retrieval.render import observation_body, tool_uses_text
from memory.retrieval.tool_uses import LIMIT_MAX, ToolUseRef, tool_uses_fetch


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
        parser.add_argument(
            "--tool-uses",
            action="store_true",
            help="Also print the raw tool input and output each was made from (as recorded, "
            "redacted, 64 KB a payload at most).",
        )

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
        raw = self._tool_uses(ordered) if options["tool_uses"] else None
        if options["json"]:
            body: dict[str, Any] = {"observations": ordered, "missing": missing}
            if raw is not None:
                body["tool_uses"] = raw
            self.stdout.write(json.dumps(body, indent=2, default=str))
        elif ordered:
            parts = [observation_text(obs) for obs in ordered]
            if raw is not None:
                parts.append(tool_uses_text(raw))
            self.stdout.write("\n\n".join(parts))
        if missing:
            raise CommandError(f"no observation with id {', '.join(map(str, missing))}")

    def _tool_uses(self, observations: list[dict[str, Any]]) -> dict[str, Any]:
        """The tool uses behind `observations`, as /api/tool-uses answers (datetimes as ISO)."""
        found = tool_uses_fetch(
            refs=[ToolUseRef(kind="observation", pk=obs["id"]) for obs in observations],
            limit=LIMIT_MAX,
        ).as_dict()
        for use in found["tool_uses"]:
            use["created_at"] = use["created_at"].isoformat()
        return found
