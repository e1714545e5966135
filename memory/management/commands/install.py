from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory import installer, mcp_install


class Command(BaseCommand):
    help = (
        "Write cmem's hooks into Claude Code's settings (idempotent) and register the MCP server."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--claude-settings",
            "--settings-file",
            dest="claude_settings",
            type=Path,
            default=None,
            help="Settings file (default ~/.claude/settings.json).",
        )
        parser.add_argument(
            "--plugin-dir",
            type=Path,
            default=None,
            help="Also write a Claude Code plugin folder here.",
        )
        parser.add_argument("--no-mcp", action="store_true", help="Do not register the MCP server.")

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["claude_settings"] or installer.claude_settings_path()
        command = installer.hook_command()
        try:
            report = installer.settings_install(path=path, command=command)
        except installer.InstallError as exc:
            raise CommandError(str(exc)) from None
        if report.changed:
            backup = f" (backup: {report.backup})" if report.backup else ""
            self.stdout.write(f"cmem hooks installed in {path}{backup}")
        else:
            self.stdout.write(f"cmem hooks already installed in {path}")
        if command != "cmem":
            self.stdout.write(f"`cmem` is not on the PATH hooks see, so hooks run {command}")
        if not options["no_mcp"]:
            self.stdout.write(mcp_install.mcp_register(home=Path.home(), command=command))
        if options["plugin_dir"]:
            self.stdout.write(
                mcp_install.plugin_dir_write(directory=options["plugin_dir"], command=command)
            )
