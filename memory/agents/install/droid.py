"""`cmem install --droid` / `uninstall --droid` / doctor: cmem's hooks in Factory Droid's
user settings (`~/.factory/settings.json`; `$FACTORY_HOME_OVERRIDE/.factory` when set, as
Droid reads it) and its MCP server in `~/.factory/mcp.json`.

The settings file has Claude Code's hooks shape and event names (event -> [{matcher, hooks:
[{type, command, timeout}]}]), so the Claude Code installer's merge does the work: the
user's other hooks and keys are kept, the file is backed up before it changes, a second
install changes nothing. Timeouts are in seconds; `hooksDisabled: true` turns every hook
off, which doctor reports.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path
from typing import Any

from memory.agents.install import claude_code as installer
from memory.agents.install.check import Check

name = "droid"
label = "Factory Droid"

# (Droid event, matcher or None, cmem event, timeout in seconds)
HOOKS: list[tuple[str, str | None, str, int]] = [
    ("SessionStart", None, "context", 30),
    ("UserPromptSubmit", None, "session-init", 30),
    # Only Read reads a whole file the gate can answer for.
    ("PreToolUse", "Read", "file-context", 10),
    ("PostToolUse", None, "observation", 30),
    ("Stop", None, "summarize", 60),
    ("SessionEnd", None, "session-end", 10),
]
MCP_SERVER = "cmem"


def droid_home() -> Path:
    base = os.environ.get("FACTORY_HOME_OVERRIDE")
    return (Path(base).expanduser() if base else Path.home()) / ".factory"


def settings_path(home: Path | None = None) -> Path:
    return (home or droid_home()) / "settings.json"


def mcp_path(home: Path | None = None) -> Path:
    return (home or droid_home()) / "mcp.json"


def hook_entries(*, command: str) -> dict[str, list[dict[str, Any]]]:
    entries: dict[str, list[dict[str, Any]]] = {}
    for event, matcher, cmem_event, timeout in HOOKS:
        hook = {
            "name": f"cmem-{cmem_event}",
            "type": "command",
            "command": f"{shlex.quote(command)} hook droid {cmem_event}",
            "timeout": timeout,
        }
        group: dict[str, Any] = {"hooks": [hook]}
        if matcher is not None:
            group = {"matcher": matcher, **group}
        entries.setdefault(event, []).append(group)
    return entries


def is_cmem_hook(hook: Any) -> bool:
    if not isinstance(hook, dict):
        return False
    try:
        words = shlex.split(str(hook.get("command") or ""))
    except ValueError:
        return False
    return len(words) >= 3 and Path(words[0]).name == "cmem" and words[1:3] == ["hook", "droid"]


def _mcp_entry(command: str) -> dict[str, Any]:
    return {"type": "stdio", "command": command, "args": ["mcp"]}


def _mcp_set(home: Path | None, entry: dict[str, Any] | None) -> str:
    path = mcp_path(home)
    state, backup = installer.server_entry_set(path, key="mcpServers", name=MCP_SERVER, entry=entry)
    if state == "absent":
        return ""
    if state == "removed":
        return f"MCP server {MCP_SERVER!r} removed from {path} (backup: {backup})"
    if state == "unchanged":
        return f"MCP server {MCP_SERVER!r} already registered in {path}"
    note = f" (backup: {backup})" if backup else ""
    return f"MCP server {MCP_SERVER!r} registered in {path}{note}"


def detected() -> bool:
    """Droid is on this machine: its binary on PATH or its settings folder exists."""
    return bool(shutil.which("droid")) or droid_home().is_dir()


def install(*, command: str, home: Path | None = None, mcp: bool = True) -> list[str]:
    """Add cmem's hooks to Droid's settings (and its MCP server to mcp.json); the report's lines."""
    path = settings_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    data, original = installer.settings_read(path)
    hooks, _ = installer.hooks_without(dict(data.get("hooks") or {}), is_ours=is_cmem_hook)
    for event, groups in hook_entries(command=command).items():
        hooks[event] = [*(hooks.get(event) or []), *groups]
    new = {**data, "hooks": hooks}
    if original is not None and new == data:
        lines = [f"cmem Factory Droid hooks already installed in {path}"]
    else:
        backup = installer.settings_write(path, new, original)
        lines = [
            f"cmem Factory Droid hooks installed in {path}"
            + (f" (backup: {backup})" if backup else "")
        ]
    if mcp:
        lines.append(_mcp_set(home, _mcp_entry(command)))
    return lines


def uninstall(*, home: Path | None = None, keep_mcp: bool = False) -> list[str]:
    path = settings_path(home)
    data, original = installer.settings_read(path)
    hooks, removed = installer.hooks_without(dict(data.get("hooks") or {}), is_ours=is_cmem_hook)
    lines = [f"no cmem hooks in {path}"]
    if original is not None and removed:
        new = {**data, "hooks": hooks}
        if not hooks:
            new.pop("hooks")
        backup = installer.settings_write(path, new, original)
        lines = [f"cmem Factory Droid hooks removed from {path} (backup: {backup})"]
    if not keep_mcp:
        note = _mcp_set(home, None)
        if note:
            lines.append(note)
    return lines


def installed_commands(home: Path | None = None) -> dict[str, list[str]]:
    """cmem's hook commands per Qwen event (empty when none or unreadable)."""
    try:
        data, _ = installer.settings_read(settings_path(home))
    except installer.InstallError:
        return {}
    found: dict[str, list[str]] = {}
    for event, groups in (data.get("hooks") or {}).items():
        for group in groups if isinstance(groups, list) else []:
            for hook in (group.get("hooks") or []) if isinstance(group, dict) else []:
                if is_cmem_hook(hook):
                    found.setdefault(event, []).append(str(hook["command"]))
    return found


def doctor_checks(*, home: Path | None = None) -> list[Any]:
    """Are cmem's Droid hooks complete, runnable and enabled? Nothing when not installed."""
    path = settings_path(home)
    found = installed_commands(home)
    if not found:
        return []
    missing = sorted({event for event, *_ in HOOKS} - set(found))
    checks = [
        Check(
            "fail",
            f"Factory Droid hooks missing for {', '.join(missing)} in {path}",
            "run `cmem install --droid`",
        )
        if missing
        else Check("ok", f"Factory Droid hooks installed for all {len(HOOKS)} events in {path}")
    ]
    data, _ = installer.settings_read(path)
    if data.get("hooksDisabled") is True:
        checks.append(
            Check(
                "fail",
                f"hooksDisabled is true in {path}: Factory Droid runs no hooks",
                "remove it or set it to false",
            )
        )
    program = shlex.split(next(iter(found.values()))[0])[0]
    if program != "cmem" and not os.access(program, os.X_OK):
        checks.append(
            Check(
                "fail",
                f"Factory Droid hooks run {program}, which is not executable",
                "run `cmem install --droid` again",
            )
        )
    try:
        servers, _ = installer.settings_read(mcp_path(home))
    except installer.InstallError:
        servers = {}
    if MCP_SERVER not in (servers.get("mcpServers") or {}):
        checks.append(
            Check(
                "warn",
                f"cmem's MCP server is not registered in {mcp_path(home)}",
                "run `cmem install --droid`",
            )
        )
    return checks
