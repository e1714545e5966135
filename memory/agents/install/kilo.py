"""`cmem install --kilo` / `uninstall --kilo` / doctor: cmem's plugin and MCP server in the
Kilo Code CLI's global config folder (`$XDG_CONFIG_HOME/kilo`, else `~/.config/kilo`).

Kilo is a fork of OpenCode and loads plugins the same way (every `.js`/`.ts` in `plugin/`
at start, no trust step), so this is OpenCode's installer pointed at Kilo's folder and
config file (`kilo.json`, MCP servers under `mcp`), with the plugin calling
`cmem hook kilo`. Kilo does not read OpenCode's folder (checked with 7.7.7), so a machine
with both gets one plugin in each and each session is captured once.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from memory import config
from memory.agents.install import claude_code as installer
from memory.agents.install import opencode
from memory.agents.install.check import Check

name = "kilo"
label = "Kilo Code CLI"
PLUGIN_FILE = opencode.PLUGIN_FILE
MCP_SERVER = opencode.MCP_SERVER
_SPAWN = '["hook", "opencode", event]'
_SYSTEM_GUARD = "if (!input.sessionID || parents.has(input.sessionID)) return;"
# Kilo builds its title generator's system prompt through the same hook, under the session
# id `title-<session>` (seen with 7.7.7): no session of the user's, so it gets no index and
# is not recorded as one.
_KILO_SYSTEM_GUARD = (
    "if (!input.sessionID || parents.has(input.sessionID) || "
    'String(input.sessionID).startsWith("title-")) return;'
)


def kilo_home() -> Path:
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".config") / "kilo"


def plugin_path(home: Path | None = None) -> Path:
    return (home or kilo_home()) / "plugin" / PLUGIN_FILE


def config_path(home: Path | None = None) -> Path:
    return (home or kilo_home()) / "kilo.json"


def plugin_source(*, command: str) -> str:
    """OpenCode's plugin, calling `cmem hook kilo` and naming Kilo in its header."""
    source = opencode.plugin_source(command=command)
    for needle in (_SPAWN, _SYSTEM_GUARD):
        if needle not in source:
            # The template changed: fail loudly rather than install a plugin that reports
            # as OpenCode or records Kilo's title generator as a session.
            raise RuntimeError(f"opencode_plugin.js no longer has {needle}")
    return (
        source.replace(_SPAWN, '["hook", "kilo", event]')
        .replace(_SYSTEM_GUARD, _KILO_SYSTEM_GUARD)
        .replace("memory for OpenCode", "memory for the Kilo Code CLI")
        .replace("--opencode", "--kilo")
        .replace("cmem hook opencode", "cmem hook kilo")
    )


def detected() -> bool:
    return bool(shutil.which("kilo")) or kilo_home().is_dir()


def _mcp_set(path: Path, entry: dict[str, Any] | None) -> str:
    if not path.exists() and path.with_suffix(".jsonc").exists():
        return f"MCP server not registered: {path.with_suffix('.jsonc')} is JSONC; add mcp.cmem by hand"
    state, backup = installer.server_entry_set(
        path, key="mcp", name=MCP_SERVER, entry=entry, new_file={}
    )
    if state == "absent":
        return ""
    if state == "removed":
        return f"MCP server {MCP_SERVER!r} removed from {path} (backup: {backup})"
    if state == "unchanged":
        return f"MCP server {MCP_SERVER!r} already registered in {path}"
    note = f" (backup: {backup})" if backup else ""
    return f"MCP server {MCP_SERVER!r} registered in {path}{note}"


def install(*, command: str, home: Path | None = None, mcp: bool = True) -> list[str]:
    path = plugin_path(home)
    source = plugin_source(command=command).encode()
    lines = []
    if path.exists() and path.read_bytes() == source:
        lines.append(f"cmem Kilo plugin already installed in {path}")
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        backup = None
        if path.exists():
            backup = path.with_name(f".{path.name}.bak")
            backup.write_bytes(path.read_bytes())
        config.write_atomic(path, source, mode=0o644)
        lines.append(
            f"cmem Kilo plugin installed in {path}" + (f" (backup: {backup})" if backup else "")
        )
    if mcp:
        lines.append(
            _mcp_set(
                config_path(home), {"type": "local", "command": [command, "mcp"], "enabled": True}
            )
        )
    return lines


def uninstall(*, home: Path | None = None, keep_mcp: bool = False) -> list[str]:
    path = plugin_path(home)
    lines = [
        installer.file_remove_with_backup(path, "cmem Kilo plugin") or f"no cmem plugin in {path}"
    ]
    if not keep_mcp:
        note = _mcp_set(config_path(home), None)
        if note:
            lines.append(note)
    return lines


def doctor_checks(*, home: Path | None = None) -> list[Any]:
    path = plugin_path(home)
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        command = json.loads(text.split("const CMEM = ", 1)[1].split(";", 1)[0])
    except (IndexError, ValueError):
        return [
            Check("fail", f"{path} is not cmem's plugin as written", "run `cmem install --kilo`")
        ]
    checks = [Check("ok", f"cmem Kilo plugin in {path}")]
    if command != "cmem" and not os.access(command, os.X_OK):
        checks.append(
            Check(
                "fail",
                f"the Kilo plugin runs {command}, which is not executable",
                "run `cmem install --kilo` again",
            )
        )
    elif command == "cmem" and not shutil.which("cmem"):
        checks.append(
            Check(
                "fail",
                "the Kilo plugin runs `cmem`, which is not on the PATH",
                "run `cmem install --kilo` from the installation you use",
            )
        )
    try:
        data, _ = installer.settings_read(config_path(home))
    except installer.InstallError as exc:
        data = {}
        checks.append(Check("warn", str(exc)))
    if MCP_SERVER not in (data.get("mcp") or {}):
        checks.append(
            Check(
                "warn",
                f"cmem's MCP server is not in {config_path(home)}",
                "run `cmem install --kilo`",
            )
        )
    return checks
