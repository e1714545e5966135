from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.agents.install.codex import codex_doctor_checks
from memory.management.install_arguments import (
    add_claude_settings_argument,
    add_codex_home_argument,
)
from memory.worker.doctor import doctor_checks

MARKS = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}


class Command(BaseCommand):
    help = "Check the installation (PATH, settings, hooks, worker, database, spool, API key) and say how to fix each problem."

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_claude_settings_argument(parser, help="Claude Code settings file to check.")
        add_codex_home_argument(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        checks = doctor_checks(settings_path=options["claude_settings"])
        # Codex: reported when cmem's hooks are in its hooks.json (untrusted ones never run).
        checks += codex_doctor_checks(home=options["codex_home"])
        for check in checks:
            self.stdout.write(f"{MARKS[check.status]}  {check.what}")
            if check.fix and check.status != "ok":
                self.stdout.write(f"      fix: {check.fix}")
        failed = sum(1 for c in checks if c.status == "fail")
        if failed:
            raise CommandError(f"{failed} problem(s) found")
        self.stdout.write("no problems found")
