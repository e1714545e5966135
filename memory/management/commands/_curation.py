"""What the curation verbs share (`cmem remember`, `pin`, `unpin`, `retire`, `restore`,
`correct`, `edit`, `history`, `undo`): who is acting, ids, errors and the one-line outcome.

Django skips this module when it lists commands (its name starts with `_`).

Who is acting: the user, unless this process runs inside an agent's shell. The MCP tools
are the agent's surface, and it may not pin or overrule a person there; without this check
the same agent could run `cmem pin` from its shell tool and get as the user what the tool
refuses it. Claude Code marks the commands its Bash tool runs with `CLAUDECODE=1`, Gemini CLI
with `GEMINI_CLI=1`. This is
a guard against a prompt-injected agent using the obvious route, not a sandbox: an agent
that can run any shell command runs as you (docs/guide/corrections.md says so).
"""

from __future__ import annotations

import argparse
import os
from argparse import ArgumentParser
from typing import Any, ClassVar

from django.core.management.base import BaseCommand, CommandError, OutputWrapper

from memory.curation import corrections, history
from memory.curation.policy import Actor, CurationDenied, CurationError, CurationNotFound
from memory.models import Observation

# (variable, value, agent): the marks an agent's shell carries, each read in the agent's own
# code: Claude Code's Bash tool; Gemini CLI 0.61.0's shell execution service sets
# GEMINI_CLI=1 (GEMINI_CLI_IDENTIFICATION_ENV_VAR in its bundle). Codex's and OpenCode's npm
# packages are launchers of platform binaries we did not inspect: not detected.
AGENT_SHELLS = (("CLAUDECODE", "1", "Claude Code"), ("GEMINI_CLI", "1", "Gemini CLI"))
FAILURES = (CurationError, CurationDenied, CurationNotFound)
ID_MAX = 2**63 - 1


def cli_actor(stderr: OutputWrapper) -> str:
    """agent inside an agent's shell (and says so on stderr), else user."""
    for variable, value, agent in AGENT_SHELLS:
        if os.environ.get(variable) == value:
            stderr.write(
                f"cmem: running inside {agent}'s shell ({variable}={value}), so acting as the agent: "
                "pinning, all-projects memories and changing what a person wrote are yours, from "
                "your own terminal."
            )
            return Actor.AGENT
    return Actor.USER


def obs_id(raw: str) -> int:
    """An id argument (`12` or `#12`); argparse turns the error into a usage error (exit 2)."""
    text = raw.strip().lstrip("#")
    if not text.isascii() or not text.isdigit() or not 0 < int(text) <= ID_MAX:
        raise argparse.ArgumentTypeError(f"{raw!r} is not an id (a positive whole number)")
    return int(text)


def failure(exc: Exception) -> CommandError:
    """The service's refusal as the command's error (exit 1, one line)."""
    return CommandError(str(exc))


def describe(row: Observation) -> str:
    tags = ", ".join(row.tags)
    return f"#{row.pk} [{row.type}] {row.title}" + (f" ({tags})" if tags else "")


def state(row: Observation) -> str:
    if row.status == Observation.Status.SUPERSEDED and row.superseded_by_id:
        said = f"superseded by #{row.superseded_by_id}"
    else:
        said = str(row.status)
    return said + (", pinned" if row.pinned else "")


DONE = {
    "pin": "Pinned",
    "unpin": "Unpinned",
    "retire": "Retired",
    "restore": "Restored",
    "wrong": "Marked wrong",
    "outdated": "Marked outdated",
    "supersede": "Marked superseded",
}


class MarkCommand(BaseCommand):
    """One `observation_mark` action on one id (pin, unpin, retire, restore; `correct`)."""

    action: ClassVar[str] = ""
    takes_reason: ClassVar[bool] = True

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("id", type=obs_id, help="The memory's id (as search shows it).")
        if self.takes_reason:
            parser.add_argument("--reason", default="", help="Why; shown in its history.")

    def handle(self, *args: Any, **options: Any) -> None:
        self.mark(options["id"], self.action, reason=options.get("reason") or "")

    def mark(
        self, pk: int, action: str, *, reason: str = "", superseded_by: int | None = None
    ) -> None:
        actor = cli_actor(self.stderr)
        try:
            before = history.snapshot(history.observation_visible(pk))
            row = corrections.observation_mark(
                pk, action=action, actor=actor, reason=reason, superseded_by=superseded_by
            )
        except FAILURES as exc:
            raise failure(exc) from None
        if actor == Actor.AGENT and action in corrections.PERSON_ONLY:
            self.stdout.write(
                f"Proposed to the user: {action} #{pk}. Only a person pins; the proposal waits on "
                f"its history (`cmem history {pk}`)."
            )
        elif history.snapshot(row) == before:
            self.stdout.write(f"#{pk} is already {state(row)}; nothing changed.")
        else:
            self.stdout.write(f"{DONE[action]} {describe(row)}.")
