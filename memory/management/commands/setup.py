from __future__ import annotations

import shutil
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from memory import config
from memory.agents.install import claude_code as installer
from memory.agents.install import codex as codex_install
from memory.agents.install import routes
from memory.agents.install.agents import agents_detected
from memory.management.install_arguments import (
    add_claude_settings_argument,
    add_codex_home_argument,
)
from memory.models import ContextCache
from memory.runtime.credentials import owner_login_url
from memory.travel.sync.engine import SyncError, sync_configure, sync_run
from memory.worker import lifecycle
from memory.worker import state as worker


def claude_code_found(settings: Path) -> bool:
    return bool(shutil.which("claude")) or settings.parent.is_dir()


def codex_found(home: Path) -> bool:
    return bool(codex_install.codex_binary()) or home.is_dir()


AGENT_LABELS = {
    "gemini": "Gemini CLI",
    "copilot": "Copilot CLI",
    "opencode": "OpenCode",
    "qwen": "Qwen Code",
    "kilo": "Kilo Code CLI",
    "droid": "Factory Droid",
    "continue": "Continue CLI",
}


class Command(BaseCommand):
    help = (
        "The whole first run in one command, safe to repeat: create the database, start the "
        "worker, install the hooks and MCP server for the agents found (Claude Code, Codex, Gemini CLI, Copilot CLI, OpenCode, Qwen Code, Kilo Code CLI, Factory Droid), "
        "check everything, and say where the dashboard is."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        add_claude_settings_argument(parser)
        add_codex_home_argument(parser)
        parser.add_argument("--no-start", action="store_true", help="Do not start the worker.")
        parser.add_argument("--timeout", type=float, default=60.0, help="Seconds to wait for it.")
        parser.add_argument(
            "--from-remote",
            default="",
            metavar="URL",
            help="Import the memory synced to this git remote first (`cmem sync`'s remote).",
        )
        parser.add_argument(
            "--sync-key-file", type=Path, help="The key of that remote, when it is encrypted."
        )

    def step(self, text: str) -> None:
        self.stdout.write(f"\n== {text}")

    def from_remote(self, remote: str, key_file: Path | None) -> None:
        """Before the worker starts: the synced memory, so the first SessionStart has it."""
        try:
            key = key_file.read_text().strip() if key_file else ""
            for said in sync_configure(remote=remote, encrypt=False, key=key):
                self.stdout.write(said)
            report = sync_run()  # the remote just configured
        except (OSError, SyncError) as exc:
            raise CommandError(f"--from-remote: {exc}") from None
        # Every project's index is rendered again from what came in.
        ContextCache.objects.all().delete()
        self.stdout.write(report.describe())

    def handle(self, *args: Any, **options: Any) -> None:
        settings = options["claude_settings"] or installer.claude_settings_path()
        codex_home = options["codex_home"] or codex_install.codex_home()
        self.step("database")
        call_command("migrate", interactive=False, verbosity=0)
        call_command("ensure_admin", stdout=self.stdout)
        remote = options["from_remote"] or config.get("CLAUDE_MEM_SYNC_FROM_REMOTE").strip()
        if remote:
            self.step("memory from the remote")
            self.from_remote(remote, options["sync_key_file"])
        url = f"{worker.worker_address().url}/"
        if not options["no_start"]:
            self.step("worker")
            try:
                result = lifecycle.worker_start(timeout=options["timeout"])
            except worker.WorkerError as exc:
                raise CommandError(str(exc)) from None
            url = f"{result.state.address.url}/"
            verb = "already running" if result.already_running else "started"
            self.stdout.write(f"cmem {verb}: {url} (pid {result.state.pid})")
        agents = []
        if claude_code_found(settings):
            self.step("Claude Code")
            plugin = routes.plugin_installed(settings)
            if plugin:
                self.stdout.write(routes.plugin_active_note(plugin))
                routes.route_record("plugin")
            else:
                call_command("install", claude_settings=settings, stdout=self.stdout)
            agents.append("Claude Code")
        if codex_found(codex_home):
            self.step("Codex")
            call_command("install", codex=True, codex_home=codex_home, stdout=self.stdout)
            agents.append("Codex")
        for name in agents_detected():
            label = AGENT_LABELS.get(name, name)
            self.step(label)
            call_command("install", agent=name, stdout=self.stdout)
            agents.append(label)
        if not agents:
            self.stdout.write(
                "\nNo agent found (no claude, codex, gemini, copilot, opencode, qwen, kilo or droid on PATH, nor their config folders): "
                "install one, then run `cmem setup` again."
            )
        self.step("doctor")
        try:
            call_command("doctor", claude_settings=settings, stdout=self.stdout)
            healthy = True
        except CommandError as exc:
            self.stdout.write(f"doctor: {exc}; the fixes are listed above.")
            healthy = False
        if options["no_start"]:
            dashboard = f"{url}  (start the worker with `cmem start`; `cmem open` logs you in)"
        else:  # a bare URL answers 403 (owner-only): a link that logs this browser in once
            dashboard = f"{owner_login_url(url)}\n           (one-time login link; `cmem open` makes another)"
        self.stdout.write(f"\nDashboard: {dashboard}")
        self.stdout.write("Next: start a session in " + (" or ".join(agents) or "your agent"))
        self.stdout.write(
            "      and watch it arrive on the dashboard; `cmem demo` loads a demo history."
        )
        if not healthy:
            raise CommandError("setup finished, but `cmem doctor` found problems (listed above)")
