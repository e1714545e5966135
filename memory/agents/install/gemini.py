"""`cmem install --gemini` / `uninstall --gemini` / doctor: cmem's hooks and MCP server in
the Gemini CLI's user settings (`~/.gemini/settings.json`; `$GEMINI_CLI_HOME/.gemini` when set).

The file has Claude Code's hooks shape (event -> [{matcher, hooks: [{type, command, timeout}]}]),
so the Claude Code installer's merge does the work: the user's other hooks and keys are kept,
the file is backed up before it changes, a second install changes nothing. User-level hooks
need no trust step (Gemini fingerprints and asks only for project-level ones); Gemini's
timeouts are in milliseconds.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path
from typing import Any

from memory.agents.install import claude_code as installer
from memory.agents.install.check import Check

name = "gemini"
label = "Gemini CLI"

# (Gemini event, matcher or None, cmem event, timeout in ms)
HOOKS: list[tuple[str, str | None, str, int]] = [
    ("SessionStart", None, "context", 30_000),
    ("BeforeAgent", None, "session-init", 30_000),
    # Only read_file reads a whole file the gate can answer for; Gemini's BeforeTool
    # matcher is a regex over the tool name.
    ("BeforeTool", "^read_file$", "file-context", 10_000),
    ("AfterTool", None, "observation", 30_000),
    ("AfterAgent", None, "summarize", 60_000),
    # Gemini does not wait for SessionEnd hooks; the spool keeps what a killed one loses.
    ("SessionEnd", None, "session-end", 10_000),
]
MCP_SERVER = "cmem"


def gemini_home() -> Path:
    base = os.environ.get("GEMINI_CLI_HOME")
    return (Path(base).expanduser() if base else Path.home()) / ".gemini"


def settings_path(home: Path | None = None) -> Path:
    return (home or gemini_home()) / "settings.json"


def hook_entries(*, command: str) -> dict[str, list[dict[str, Any]]]:
    entries: dict[str, list[dict[str, Any]]] = {}
    for event, matcher, cmem_event, timeout in HOOKS:
        hook = {
            "name": f"cmem-{cmem_event}",
            "type": "command",
            "command": f"{shlex.quote(command)} hook gemini {cmem_event}",
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
    return len(words) >= 3 and Path(words[0]).name == "cmem" and words[1:3] == ["hook", "gemini"]


def _mcp_entry(command: str) -> dict[str, Any]:
    return {"command": command, "args": ["mcp"]}


def detected() -> bool:
    """Gemini CLI is on this machine: its binary on PATH or its settings folder exists."""
    return bool(shutil.which("gemini")) or gemini_home().is_dir()


def install(*, command: str, home: Path | None = None, mcp: bool = True) -> list[str]:
    """Add cmem's hooks (and MCP server) to Gemini's settings; the report's lines."""
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
        return [f"cmem Gemini CLI hooks already installed in {path}"]
    backup = installer.settings_write(path, new, original)
    lines = [
        f"cmem Gemini CLI hooks installed in {path}" + (f" (backup: {backup})" if backup else "")
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
    what = "cmem Gemini CLI hooks" if removed else "cmem's MCP server"
    return [f"{what} removed from {path} (backup: {backup})"]


def installed_commands(home: Path | None = None) -> dict[str, list[str]]:
    """cmem's hook commands per Gemini event (empty when none or unreadable)."""
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
    """Are cmem's Gemini hooks complete, runnable and enabled? Nothing when not installed."""
    path = settings_path(home)
    found = installed_commands(home)
    if not found:
        return []
    missing = sorted({event for event, *_ in HOOKS} - set(found))
    checks = [
        Check(
            "fail",
            f"Gemini CLI hooks missing for {', '.join(missing)} in {path}",
            "run `cmem install --gemini`",
        )
        if missing
        else Check("ok", f"Gemini CLI hooks installed for all {len(HOOKS)} events in {path}")
    ]
    data, _ = installer.settings_read(path)
    enabled = (data.get("hooksConfig") or {}).get("enabled", True)
    if enabled is False:
        checks.append(
            Check(
                "fail",
                f"hooksConfig.enabled is false in {path}: Gemini runs no hooks",
                "set it to true",
            )
        )
    disabled = set((data.get("hooksConfig") or {}).get("disabled") or [])
    off = sorted(disabled & {f"cmem-{e}" for _, _, e, _ in HOOKS})
    if off:
        checks.append(
            Check(
                "fail",
                f"cmem hooks disabled in Gemini: {', '.join(off)}",
                f"remove them from hooksConfig.disabled in {path}",
            )
        )
    program = shlex.split(next(iter(found.values()))[0])[0]
    if program != "cmem" and not os.access(program, os.X_OK):
        checks.append(
            Check(
                "fail",
                f"Gemini hooks run {program}, which is not executable",
                "run `cmem install --gemini` again",
            )
        )
    if MCP_SERVER not in (data.get("mcpServers") or {}):
        checks.append(
            Check(
                "warn",
                f"cmem's MCP server is not registered in {path}",
                "run `cmem install --gemini`",
            )
        )
    return checks
