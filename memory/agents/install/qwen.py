"""`cmem install --qwen` / `uninstall --qwen` / doctor: cmem's hooks and MCP server in Qwen
Code's user settings (`~/.qwen/settings.json`; `$QWEN_HOME/settings.json` when set, as Qwen
reads it).

The file has Claude Code's hooks shape and event names (event -> [{matcher, hooks: [{type,
command, timeout}]}]), so the Claude Code installer's merge does the work: the user's other
hooks and keys are kept, the file is backed up before it changes, a second install changes
nothing. Timeouts are in seconds (Qwen reads 1000 or more as legacy milliseconds);
`disableAllHooks: true` turns every hook off, which doctor reports.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path
from typing import Any

from memory.agents.install import claude_code as installer
from memory.agents.install.check import Check

name = "qwen"
label = "Qwen Code"

# (Qwen event, matcher or None, cmem event, timeout in seconds)
HOOKS: list[tuple[str, str | None, str, int]] = [
    ("SessionStart", None, "context", 30),
    ("UserPromptSubmit", None, "session-init", 30),
    # Only read_file reads a whole file the gate can answer for.
    ("PreToolUse", "read_file", "file-context", 10),
    ("PostToolUse", None, "observation", 30),
    ("PostToolUseFailure", None, "observation", 30),
    ("Stop", None, "summarize", 60),
    ("SessionEnd", None, "session-end", 10),
]
MCP_SERVER = "cmem"


def qwen_home() -> Path:
    base = os.environ.get("QWEN_HOME")
    return Path(base).expanduser() if base else Path.home() / ".qwen"


def settings_path(home: Path | None = None) -> Path:
    return (home or qwen_home()) / "settings.json"


def hook_entries(*, command: str) -> dict[str, list[dict[str, Any]]]:
    entries: dict[str, list[dict[str, Any]]] = {}
    for event, matcher, cmem_event, timeout in HOOKS:
        hook = {
            "name": f"cmem-{cmem_event}",
            "type": "command",
            "command": f"{shlex.quote(command)} hook qwen {cmem_event}",
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
    return len(words) >= 3 and Path(words[0]).name == "cmem" and words[1:3] == ["hook", "qwen"]


def _mcp_entry(command: str) -> dict[str, Any]:
    return {"command": command, "args": ["mcp"]}


def detected() -> bool:
    """Qwen Code is on this machine: its binary on PATH or its settings folder exists."""
    return bool(shutil.which("qwen")) or qwen_home().is_dir()


def install(*, command: str, home: Path | None = None, mcp: bool = True) -> list[str]:
    """Add cmem's hooks (and MCP server) to Qwen's settings; the report's lines."""
    path = settings_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    data, original = installer.settings_read(path)
    hooks, _ = installer.hooks_without(dict(data.get("hooks") or {}), is_ours=is_cmem_hook)
    for event, groups in hook_entries(command=command).items():
        hooks[event] = [*(hooks.get(event) or []), *groups]
    new = {**data, "hooks": hooks}
    if mcp:
        raw_servers = data.get("mcpServers")
        servers: dict[str, Any] = raw_servers if isinstance(raw_servers, dict) else {}
        new["mcpServers"] = {**servers, MCP_SERVER: _mcp_entry(command)}
    if original is not None and new == data:
        return [f"cmem Qwen Code hooks already installed in {path}"]
    backup = installer.settings_write(path, new, original)
    lines = [
        f"cmem Qwen Code hooks installed in {path}" + (f" (backup: {backup})" if backup else "")
    ]
    if mcp:
        lines.append(f"MCP server {MCP_SERVER!r} registered in {path} ({command} mcp)")
    return lines


def uninstall(*, home: Path | None = None, keep_mcp: bool = False) -> list[str]:
    path = settings_path(home)
    data, original = installer.settings_read(path)
    if original is None:
        return [f"no cmem hooks in {path}"]
    hooks, removed = installer.hooks_without(dict(data.get("hooks") or {}), is_ours=is_cmem_hook)
    new = {**data, "hooks": hooks}
    if not hooks:
        new.pop("hooks")
    servers = data.get("mcpServers")
    if not keep_mcp and isinstance(servers, dict) and MCP_SERVER in servers:
        new["mcpServers"] = {k: v for k, v in servers.items() if k != MCP_SERVER}
        if not new["mcpServers"]:
            new.pop("mcpServers")
    if new == data:
        return [f"no cmem hooks in {path}"]
    backup = installer.settings_write(path, new, original)
    what = "cmem Qwen Code hooks" if removed else "cmem's MCP server"
    return [f"{what} removed from {path} (backup: {backup})"]


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
    """Are cmem's Qwen hooks complete, runnable and enabled? Nothing when not installed."""
    path = settings_path(home)
    found = installed_commands(home)
    if not found:
        return []
    missing = sorted({event for event, *_ in HOOKS} - set(found))
    checks = [
        Check(
            "fail",
            f"Qwen Code hooks missing for {', '.join(missing)} in {path}",
            "run `cmem install --qwen`",
        )
        if missing
        else Check("ok", f"Qwen Code hooks installed for all {len(HOOKS)} events in {path}")
    ]
    data, _ = installer.settings_read(path)
    if data.get("disableAllHooks") is True:
        checks.append(
            Check(
                "fail",
                f"disableAllHooks is true in {path}: Qwen Code runs no hooks",
                "remove it or set it to false",
            )
        )
    program = shlex.split(next(iter(found.values()))[0])[0]
    if program != "cmem" and not os.access(program, os.X_OK):
        checks.append(
            Check(
                "fail",
                f"Qwen Code hooks run {program}, which is not executable",
                "run `cmem install --qwen` again",
            )
        )
    if MCP_SERVER not in (data.get("mcpServers") or {}):
        checks.append(
            Check(
                "warn",
                f"cmem's MCP server is not registered in {path}",
                "run `cmem install --qwen`",
            )
        )
    return checks
