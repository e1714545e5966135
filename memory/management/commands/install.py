from __future__ import annotations

import sys
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.agents.install import claude_code as installer
from memory.agents.install import codex as codex_install
from memory.agents.install import codex_mcp, routes
from memory.agents.install import mcp as mcp_install
from memory.agents.install.agents import AGENTS, agent_install
from memory.management.arguments import VERB_HELP, add_install_arguments


class Command(BaseCommand):
    help = VERB_HELP["install"]

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_install_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        agent = options["agent"]
        if agent in AGENTS:
            try:
                lines = agent_install(
                    agent,
                    command=installer.hook_command(),
                    home=options["agent_home"],
                    mcp=not options["no_mcp"],
                )
            except installer.InstallError as exc:
                raise CommandError(str(exc)) from None
            for line in lines:
                self.stdout.write(line)
            return
        if options["codex"] or agent == "codex":
            self._codex(
                options["codex_home"] or codex_install.codex_home(), mcp=not options["no_mcp"]
            )
            return
        path = options["claude_settings"] or installer.claude_settings_path()
        plugin = routes.plugin_installed(path)
        if plugin and not options["plugin_dir"]:
            # One route at a time: hooks from both would capture twice and refuse twice.
            routes.route_record("plugin")
            self.stdout.write(f"cmem: {routes.plugin_active_note(plugin)}")
            return
        command = installer.hook_command()
        data_dir = installer.custom_data_dir()
        try:
            report = installer.settings_install(
                path=path, command=command, data_dir=data_dir, entry=installer.hook_entry_argv()
            )
        except installer.InstallError as exc:
            raise CommandError(str(exc)) from None
        if report.changed:
            backup = f" (backup: {report.backup})" if report.backup else ""
            self.stdout.write(f"cmem hooks installed in {path}{backup}")
        else:
            self.stdout.write(f"cmem hooks already installed in {path}")
        routes.route_record("settings")
        self.stdout.write(f"hooks run {sys.executable} -I -S with cmem's stdlib hook entry")
        if data_dir:
            self.stdout.write(f"hooks and the MCP server use the data dir {data_dir}")
        if not options["no_mcp"]:
            self.stdout.write(
                mcp_install.mcp_register(home=Path.home(), command=command, data_dir=data_dir)
            )
        if options["plugin_dir"]:
            self.stdout.write(
                mcp_install.plugin_dir_write(directory=options["plugin_dir"], command=command)
            )

    def _codex(self, home: Path, *, mcp: bool) -> None:
        path = codex_install.hooks_path(home)
        command = installer.hook_command()
        data_dir = installer.custom_data_dir()
        try:
            report = codex_install.hooks_install(path=path, command=command, data_dir=data_dir)
        except installer.InstallError as exc:
            raise CommandError(str(exc)) from None
        backup = f" (backup: {report.backup})" if report.backup else ""
        verb = "installed in" if report.changed else "already installed in"
        self.stdout.write(f"cmem Codex hooks {verb} {path}{backup}")
        if mcp:
            # Before trust: `codex app-server` then writes config.toml after cmem, not under it.
            registered = codex_mcp.mcp_register(
                home=home, command=str(installer.own_executable()), data_dir=data_dir
            )
            self.stdout.write(registered.line())
        binary = codex_install.codex_binary()
        if not binary:
            self.stdout.write(
                f"`codex` was not found, so the hooks are not trusted yet. {codex_install.TRUST_HINT}"
            )
            return
        try:
            trust = codex_install.hooks_trust(binary=binary, home=home, path=path)
        except codex_install.CodexTrustError as exc:
            self.stdout.write(f"could not record trust ({exc}). {codex_install.TRUST_HINT}")
            return
        for warning in trust.warnings:
            self.stdout.write(f"codex says: {warning}")
        if trust.trusted:
            self.stdout.write(
                f"trusted {len(trust.trusted)} cmem hook(s) in {home / 'config.toml'}"
            )
        elif trust.already:
            self.stdout.write("cmem hooks already trusted")
        else:
            self.stdout.write(f"codex listed no cmem hooks to trust. {codex_install.TRUST_HINT}")
