"""The installer of an agent whose user settings file holds Claude Code's hooks shape.

Gemini CLI, Qwen Code and Factory Droid keep hooks as event -> [{matcher, hooks: [{type,
command, timeout}]}] in a JSON settings file, so one installer serves them, told apart by a
`SettingsHooks` (where the file is, the events, how the agent switches hooks off, where the
MCP server goes). The Claude Code installer's merge does the work: the user's other hooks
and keys are kept, the file is backed up before it changes, a second install changes
nothing. Each agent's module (gemini.py, qwen.py, droid.py) names its own and exposes the
functions memory/agents/install/agents.py calls.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory.agents.install import claude_code as installer
from memory.agents.install.check import Check

MCP_SERVER = "cmem"

# (agent event, matcher or None, cmem event, timeout in the agent's unit)
Hook = tuple[str, str | None, str, int]


def switched_off_by(key: str, label: str) -> Callable[[dict[str, Any], Path], list[Check]]:
    """Doctor's finding for an agent whose one `key: true` in its settings turns every hook
    off (Qwen Code's `disableAllHooks`, Droid's `hooksDisabled`)."""

    def switches(data: dict[str, Any], path: Path) -> list[Check]:
        if data.get(key) is not True:
            return []
        return [
            Check(
                "fail",
                f"{key} is true in {path}: {label} runs no hooks",
                "remove it or set it to false",
            )
        ]

    return switches


@dataclass(frozen=True)
class SettingsHooks:
    platform: str  # `cmem hook <platform>` and `cmem install --<platform>`
    label: str
    binary: str
    hooks: tuple[Hook, ...]
    home: Callable[[], Path]  # the agent's settings folder, as the agent resolves it
    # Doctor's findings about the agent's own switches that turn hooks off (the settings
    # and their path in): each agent names its switches differently.
    switches: Callable[[dict[str, Any], Path], list[Check]] = lambda data, path: []
    # A separate file for MCP servers (Droid's mcp.json); None: the settings file itself.
    mcp_file: str | None = None
    mcp_entry: Callable[[str], dict[str, Any]] = field(
        default=lambda command: {"command": command, "args": ["mcp"]}
    )

    def settings_path(self, home: Path | None = None) -> Path:
        return (home or self.home()) / "settings.json"

    def mcp_path(self, home: Path | None = None) -> Path:
        return (home or self.home()) / (self.mcp_file or "settings.json")

    def hook_entries(self, *, command: str) -> dict[str, list[dict[str, Any]]]:
        entries: dict[str, list[dict[str, Any]]] = {}
        for event, matcher, cmem_event, timeout in self.hooks:
            hook = {
                "name": f"cmem-{cmem_event}",
                "type": "command",
                "command": f"{shlex.quote(command)} hook {self.platform} {cmem_event}",
                "timeout": timeout,
            }
            group: dict[str, Any] = {"hooks": [hook]}
            if matcher is not None:
                group = {"matcher": matcher, **group}
            entries.setdefault(event, []).append(group)
        return entries

    def is_cmem_hook(self, hook: Any) -> bool:
        if not isinstance(hook, dict):
            return False
        try:
            words = shlex.split(str(hook.get("command") or ""))
        except ValueError:
            return False
        return (
            len(words) >= 3
            and Path(words[0]).name == "cmem"
            and words[1:3] == ["hook", self.platform]
        )

    def detected(self) -> bool:
        """The agent is on this machine: its binary on PATH or its settings folder exists."""
        return bool(shutil.which(self.binary)) or self.home().is_dir()

    def install(self, *, command: str, home: Path | None = None, mcp: bool = True) -> list[str]:
        """Add cmem's hooks (and MCP server) to the agent's settings; the report's lines."""
        path = self.settings_path(home)
        path.parent.mkdir(parents=True, exist_ok=True)
        data, original = installer.settings_read(path)
        hooks, _ = installer.hooks_without(dict(data.get("hooks") or {}), is_ours=self.is_cmem_hook)
        for event, groups in self.hook_entries(command=command).items():
            hooks[event] = [*(hooks.get(event) or []), *groups]
        new = {**data, "hooks": hooks}
        inline_mcp = mcp and self.mcp_file is None
        if inline_mcp:
            raw_servers = data.get("mcpServers")
            servers: dict[str, Any] = raw_servers if isinstance(raw_servers, dict) else {}
            new["mcpServers"] = {**servers, MCP_SERVER: self.mcp_entry(command)}
        if original is not None and new == data:
            lines = [f"cmem {self.label} hooks already installed in {path}"]
        else:
            backup = installer.settings_write(path, new, original)
            note = f" (backup: {backup})" if backup else ""
            lines = [f"cmem {self.label} hooks installed in {path}{note}"]
            if inline_mcp:
                lines.append(f"MCP server {MCP_SERVER!r} registered in {path} ({command} mcp)")
        if mcp and self.mcp_file is not None:
            lines.append(self._mcp_file_set(home, self.mcp_entry(command)))
        return lines

    def uninstall(self, *, home: Path | None = None, keep_mcp: bool = False) -> list[str]:
        path = self.settings_path(home)
        data, original = installer.settings_read(path)
        hooks, removed = installer.hooks_without(
            dict(data.get("hooks") or {}), is_ours=self.is_cmem_hook
        )
        new = {**data, "hooks": hooks}
        if not hooks:
            new.pop("hooks")
        servers = data.get("mcpServers")
        if (
            self.mcp_file is None
            and not keep_mcp
            and isinstance(servers, dict)
            and MCP_SERVER in servers
        ):
            new["mcpServers"] = {k: v for k, v in servers.items() if k != MCP_SERVER}
            if not new["mcpServers"]:
                new.pop("mcpServers")
        lines = [f"no cmem hooks in {path}"]
        if original is not None and new != data:
            backup = installer.settings_write(path, new, original)
            what = f"cmem {self.label} hooks" if removed else "cmem's MCP server"
            lines = [f"{what} removed from {path} (backup: {backup})"]
        if self.mcp_file is not None and not keep_mcp:
            note = self._mcp_file_set(home, None)
            if note:
                lines.append(note)
        return lines

    def _mcp_file_set(self, home: Path | None, entry: dict[str, Any] | None) -> str:
        path = self.mcp_path(home)
        state, backup = installer.server_entry_set(
            path, key="mcpServers", name=MCP_SERVER, entry=entry
        )
        return installer.server_entry_report(path, state, backup, name=MCP_SERVER)

    def installed_commands(self, home: Path | None = None) -> dict[str, list[str]]:
        """cmem's hook commands per agent event (empty when none or unreadable)."""
        try:
            data, _ = installer.settings_read(self.settings_path(home))
        except installer.InstallError:
            return {}
        found: dict[str, list[str]] = {}
        for event, groups in (data.get("hooks") or {}).items():
            for group in groups if isinstance(groups, list) else []:
                for hook in (group.get("hooks") or []) if isinstance(group, dict) else []:
                    if self.is_cmem_hook(hook):
                        found.setdefault(event, []).append(str(hook["command"]))
        return found

    def doctor_checks(self, *, home: Path | None = None) -> list[Any]:
        """Are cmem's hooks complete, runnable and enabled? Nothing when not installed."""
        path = self.settings_path(home)
        found = self.installed_commands(home)
        if not found:
            return []
        again = f"run `cmem install --{self.platform}`"
        missing = sorted({event for event, *_ in self.hooks} - set(found))
        checks = [
            Check("fail", f"{self.label} hooks missing for {', '.join(missing)} in {path}", again)
            if missing
            else Check(
                "ok", f"{self.label} hooks installed for all {len(self.hooks)} events in {path}"
            )
        ]
        data, _ = installer.settings_read(path)
        checks += self.switches(data, path)
        program = shlex.split(next(iter(found.values()))[0])[0]
        if program != "cmem" and not os.access(program, os.X_OK):
            checks.append(
                Check(
                    "fail",
                    f"{self.label} hooks run {program}, which is not executable",
                    f"{again} again",
                )
            )
        try:
            servers, _ = installer.settings_read(self.mcp_path(home))
        except installer.InstallError:
            servers = {}
        if MCP_SERVER not in (servers.get("mcpServers") or {}):
            checks.append(
                Check(
                    "warn", f"cmem's MCP server is not registered in {self.mcp_path(home)}", again
                )
            )
        return checks
