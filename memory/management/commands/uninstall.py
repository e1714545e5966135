from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.agents.install import claude_code as installer
from memory.agents.install import codex as codex_install
from memory.agents.install import codex_mcp, routes
from memory.agents.install import mcp as mcp_install
from memory.agents.install.agents import AGENTS, agent_uninstall
from memory.management import worker_verbs
from memory.management.arguments import VERB_HELP, add_uninstall_arguments


class Command(BaseCommand):
    help = VERB_HELP["uninstall"]

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_uninstall_arguments(parser)

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
            self._finish(options)
            return
        if options["codex"] or agent == "codex":
            home = options["codex_home"] or codex_install.codex_home()
            try:
                report = codex_install.hooks_uninstall(path=codex_install.hooks_path(home))
            except installer.InstallError as exc:
                raise CommandError(str(exc)) from None
            self._say_removed("cmem Codex hooks", report)
            if not options["keep_mcp"]:
                note = codex_mcp.mcp_unregister(home=home).line()
                if note:
                    self.stdout.write(note)
            self._finish(options)
            return
        path = options["claude_settings"] or installer.claude_settings_path()
        # Both routes, so that neither leaves hooks behind (an earlier `cmem install` under
        # the plugin, or a plugin added after it).
        try:
            report = installer.settings_uninstall(path=path)
        except installer.InstallError as exc:
            raise CommandError(str(exc)) from None
        self._say_removed("cmem hooks", report)
        if not options["keep_mcp"]:
            note = mcp_install.mcp_unregister(home=Path.home())
            if note:
                self.stdout.write(note)
        self._plugin(path, keep=options["keep_plugin"])
        self._finish(options)

    def _finish(self, options: dict[str, Any]) -> None:
        """Stop the worker (nothing feeds it now; the next hook of another agent starts it
        again), then say what is left and how to remove it too."""
        if not options["keep_worker"]:
            try:
                worker_verbs.stop({"timeout": 20.0}, self.stdout.write)
            except worker_verbs.VerbError as exc:
                self.stderr.write(f"cmem: the worker was not stopped: {exc}")
        data = installer.config.data_dir()
        self.stdout.write(f"your memory stays in {data}. To remove cmem entirely:")
        self.stdout.write(
            "  1. uninstall the program the way it was installed: `uv tool uninstall cmem` "
            "(or `pipx uninstall cmem`, or `pip uninstall cmem` in its environment)"
        )
        self.stdout.write(
            f"  2. delete the memory: `rm -rf {data}` (`cmem export backup.json` first keeps a copy)"
        )

    def _plugin(self, path: Path, *, keep: bool) -> None:
        """The plugin route: removed (or how to), and the recorded route follows what is left."""
        plugin = routes.plugin_installed(path)
        if not plugin:
            routes.route_clear()
            return
        if keep:
            self.stdout.write(f"the Claude Code plugin {plugin} stays and provides cmem's hooks")
            routes.route_record("plugin")
            return
        removal = routes.plugin_remove(
            plugin, settings=path, default_settings=installer.claude_settings_path()
        )
        if removal.removed:
            self.stdout.write(removal.message)
            routes.route_clear()
            return
        # Still enabled: its hooks still run, so the route (and the tool names) stay "plugin".
        self.stdout.write(f"the Claude Code plugin {plugin} is still installed: {removal.message}")
        routes.route_record("plugin")

    def _say_removed(self, what: str, report: installer.InstallReport) -> None:
        if report.changed:
            self.stdout.write(f"{what} removed from {report.path} (backup: {report.backup})")
        else:
            self.stdout.write(f"no cmem hooks in {report.path}")
