"""`cmem edit ID`: change a memory's text in $VISUAL / $EDITOR, as `git commit` does.

The form is plain text (title, type, subtitle, facts one per line, narrative). Nothing is
changed unless the saved form parses and differs from what was written out: an unchanged
file, an editor that fails, or a malformed form leave the memory as it was.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.curation import corrections, history
from memory.curation.policy import check_may_change
from memory.management.commands._curation import FAILURES, cli_actor, describe, failure, obs_id
from memory.models import Observation

HEADER = """\
# Memory #{pk} in {project}. Edit below, save and close the editor.
# Leave it unchanged to change nothing. Lines starting with # are ignored above
# `narrative:`; everything below it is the narrative. One fact per `- ` line.
# type is one of: {types}.
"""
KEYS = ("title", "type", "subtitle")


def form_render(row: Observation) -> str:
    types = ", ".join(Observation.Type.values)
    lines = [HEADER.format(pk=row.pk, project=row.project, types=types).rstrip("\n")]
    lines += [f"title: {_one_line(row.title)}", f"type: {row.type}"]
    lines += [f"subtitle: {_one_line(row.subtitle)}", "facts:"]
    lines += [f"- {_one_line(str(fact))}" for fact in row.facts]
    lines += ["narrative:", row.narrative]
    return "\n".join(lines) + "\n"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def form_parse(text: str) -> dict[str, Any]:
    """The form's fields; CommandError naming the line when it is malformed."""
    found: dict[str, Any] = {}
    lines = text.split("\n")
    in_facts = False
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped == "narrative:":
            found["narrative"] = "\n".join(lines[number:]).strip()
            break
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("- ") or stripped == "-":
            if not in_facts:
                raise CommandError(f"line {number}: a `- ` fact line outside `facts:`")
            fact = stripped[2:].strip()
            if fact:
                found["facts"].append(fact)
            continue
        key, sep, value = stripped.partition(":")
        key = key.strip()
        if stripped == "facts:":
            key, sep, value = "facts", ":", ""
        if not sep or key not in (*KEYS, "facts"):
            raise CommandError(
                f"line {number}: expected `title:`, `type:`, `subtitle:`, `facts:`, a `- fact` "
                f"or `narrative:`, not {stripped[:60]!r}"
            )
        if key in found:
            raise CommandError(f"line {number}: `{key}:` is given twice")
        in_facts = key == "facts"
        found[key] = [] if in_facts else value.strip()
    missing = [key for key in ("title", "type", "narrative") if key not in found]
    if missing:
        raise CommandError(
            f"the form has no `{missing[0]}:` line; nothing changed (run `cmem edit` again)"
        )
    return found


class Command(BaseCommand):
    help = (
        "Edit a memory's title, type, facts and narrative in $VISUAL or $EDITOR. An unchanged "
        "file changes nothing; --redact also purges the old text from its history."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("id", type=obs_id, help="The memory's id.")
        parser.add_argument(
            "--redact",
            action="store_true",
            help="Purge the old text from every earlier version (a pasted secret). Cannot be undone.",
        )
        parser.add_argument("--reason", default="", help="Why; shown in its history.")

    def handle(self, *args: Any, **options: Any) -> None:
        actor = cli_actor(self.stderr)
        try:
            row = history.observation_visible(options["id"])
            check_may_change(row, actor)  # before the editor opens: no work to lose
        except FAILURES as exc:
            raise failure(exc) from None
        written = form_render(row)
        saved = self.edited(written)
        if saved == written:
            self.stdout.write(f"No change to #{row.pk}.")
            return
        # Compared with the form as written, not the row: a value the form cannot show
        # exactly (a fact spanning lines) is not changed by being shown.
        before, after = form_parse(written), form_parse(saved)
        changes = {key: value for key, value in after.items() if before.get(key) != value}
        if not changes:
            self.stdout.write(f"No change to #{row.pk}.")
            return
        try:
            row = corrections.observation_edit(
                row.pk,
                changes=changes,
                actor=actor,
                reason=options["reason"],
                redact=options["redact"],
            )
        except FAILURES as exc:
            raise failure(exc) from None
        said = "Edited and redacted" if options["redact"] else "Edited"
        self.stdout.write(f"{said} {describe(row)} ({', '.join(sorted(changes))}).")

    def edited(self, text: str) -> str:
        """`text` as the user saved it in their editor."""
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        # Only the owner reads it: it may hold what the memory holds.
        fd, name = tempfile.mkstemp(prefix="cmem-edit-", suffix=".txt")
        path = Path(name)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            try:
                done = subprocess.run([*shlex.split(editor), str(path)], check=False)
            except (FileNotFoundError, PermissionError):
                raise CommandError(
                    f"cannot run the editor {editor!r}; set $VISUAL or $EDITOR"
                ) from None
            if done.returncode != 0:
                raise CommandError(f"the editor exited with {done.returncode}; nothing changed")
            return path.read_text(encoding="utf-8", errors="replace")
        finally:
            path.unlink(missing_ok=True)
