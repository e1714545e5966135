from __future__ import annotations

import json
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.management.arguments import VERB_HELP, add_show_arguments
from memory.management.verb_text import (
    MARKS,
    observation_text,
    parse_show_ids,
    prompt_text,
    summary_text,
)
from memory.models import Observation, Prompt, Summary
from memory.retrieval.render import tool_uses_text
from memory.retrieval.tool_uses import LIMIT_MAX, ToolUseRef, tool_uses_fetch


class Command(BaseCommand):
    help = VERB_HELP["show"]

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_show_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        parsed = parse_show_ids(options["ids"])
        if isinstance(parsed, str):
            raise CommandError(parsed, returncode=2)
        wanted = [pk for kind, pk in parsed if kind == "observation"]
        found = {obs.pk: obs.as_dict() for obs in Observation.objects.filter(pk__in=wanted)}
        others = _summaries_and_prompts(parsed)
        ordered = [found[pk] for pk in dict.fromkeys(wanted) if pk in found]
        missing = [pk for pk in dict.fromkeys(wanted) if pk not in found]
        missing_refs = [
            f"{MARKS[kind][1:]}{pk}"
            for kind, pk in dict.fromkeys(parsed)
            if kind != "observation" and (kind, pk) not in others
        ]
        raw = self._tool_uses(ordered) if options["tool_uses"] else None
        if options["json"]:
            body: dict[str, Any] = {"observations": ordered, "missing": missing}
            if others:
                body["summaries"] = [v for (k, _), v in others.items() if k == "summary"]
                body["prompts"] = [v for (k, _), v in others.items() if k == "prompt"]
            if missing_refs:
                body["missing_refs"] = missing_refs
            if raw is not None:
                body["tool_uses"] = raw
            self.stdout.write(json.dumps(body, indent=2, default=str))
        else:
            parts = []
            for kind, pk in dict.fromkeys(parsed):
                if kind == "observation" and pk in found:
                    parts.append(observation_text(found[pk]))
                elif (kind, pk) in others:
                    row = others[(kind, pk)]
                    parts.append(summary_text(row) if kind == "summary" else prompt_text(row))
            if raw is not None:
                parts.append(tool_uses_text(raw))
            if parts:
                self.stdout.write("\n\n".join(parts))
        if missing or missing_refs:
            names = [*map(str, missing), *missing_refs]
            noun = "memory" if missing_refs else "observation"
            raise CommandError(f"no {noun} with id {', '.join(names)}")

    def _tool_uses(self, observations: list[dict[str, Any]]) -> dict[str, Any]:
        """The tool uses behind `observations`, as /api/tool-uses answers (datetimes as ISO)."""
        found = tool_uses_fetch(
            refs=[ToolUseRef(kind="observation", pk=obs["id"]) for obs in observations],
            limit=LIMIT_MAX,
        ).as_dict()
        for use in found["tool_uses"]:
            use["created_at"] = use["created_at"].isoformat()
        return found


def _summaries_and_prompts(parsed: list[tuple[str, int]]) -> dict[tuple[str, int], dict[str, Any]]:
    """The summaries (S3) and prompts (P4) asked for, as plain dicts, by (kind, id)."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    summary_ids = [pk for kind, pk in parsed if kind == "summary"]
    for row in Summary.objects.filter(pk__in=summary_ids):
        out[("summary", row.pk)] = {
            "id": row.pk, "project": row.project, "session": row.session_id,
            "created_at": row.created.isoformat(), "request": row.request,
            "investigated": row.investigated, "learned": row.learned,
            "completed": row.completed, "next_steps": row.next_steps, "notes": row.notes,
        }  # fmt: skip
    prompt_ids = [pk for kind, pk in parsed if kind == "prompt"]
    for prompt in Prompt.objects.filter(pk__in=prompt_ids).select_related("session"):
        out[("prompt", prompt.pk)] = {
            "id": prompt.pk, "project": prompt.session.project, "session": prompt.session_id,
            "number": prompt.number, "created_at": prompt.created.isoformat(), "text": prompt.text,
        }  # fmt: skip
    return out
