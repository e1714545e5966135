from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.agents.install import claude_code as installer
from memory.agents.install import codex as codex_install
from memory.agents.install import mcp as mcp_install
from memory.agents.install.agents import AGENTS, agent_uninstall
from memory.management.install_arguments import (
    add_agent_arguments,
    add_claude_settings_argument,
    add_codex_home_argument,
)


class Command(BaseCommand):
    help = "Remove cmem's hooks (and only them) from Claude Code's settings, and its MCP server."

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_claude_settings_argument(parser)
        parser.add_argument(
            "--keep-mcp", action="store_true", help="Leave the MCP server registered."
        )
        parser.add_argument(
            "--codex", action="store_true", help="Remove the Codex CLI hooks instead."
        )
        add_codex_home_argument(parser)
        add_agent_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        agent = options["agent"]
        if agent in AGENTS:
            try:
                lines = agent_uninstall(
                    agent, home=options["agent_home"], keep_mcp=options["keep_mcp"]
                )
            except installer.InstallError as exc:
                raise CommandError(str(exc)) from None
            for line in lines:
                self.stdout.write(line)
            self.stdout.write(f"your memory stays in {installer.config.data_dir()}")
            return
        if options["codex"] or agent == "codex":
            path = codex_install.hooks_path(options["codex_home"] or codex_install.codex_home())
            try:
                report = codex_install.hooks_uninstall(path=path)
            except installer.InstallError as exc:
                raise CommandError(str(exc)) from None
            self._say_removed("cmem Codex hooks", report)
            self.stdout.write(f"your memory stays in {installer.config.data_dir()}")
            return
        path = options["claude_settings"] or installer.claude_settings_path()
        try:
            report = installer.settings_uninstall(path=path)
        except installer.InstallError as exc:
            raise CommandError(str(exc)) from None
        self._say_removed("cmem hooks", report)
        if not options["keep_mcp"]:
            note = mcp_install.mcp_unregister(home=Path.home())
            if note:
                self.stdout.write(note)
        self.stdout.write(f"your memory stays in {installer.config.data_dir()}")

    def _say_removed(self, what: str, report: installer.InstallReport) -> None:
        if report.changed:
            self.stdout.write(f"{what} removed from {report.path} (backup: {report.backup})")
        else:
            self.stdout.write(f"no cmem hooks in {report.path}")
