"""`cmem install --copilot` / `uninstall --copilot` / doctor: cmem's hooks and MCP server in
GitHub Copilot CLI (`$COPILOT_HOME`, default `~/.copilot`).

Copilot loads every `*.json` in its user hooks folder and runs all of them, so cmem's hooks
live in a file of their own, `hooks/cmem.json`: the user's hook files are never opened, and
uninstall removes exactly that file (backed up first). The MCP server goes into
`mcp-config.json`, changed in its one key. User-level hooks need no trust step (repository
hooks wait for folder trust); `disableAllHooks: true` in a config turns them all off.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path
from typing import Any

from memory.agents.install import claude_code as installer
from memory.agents.install.check import Check

name = "copilot"
label = "GitHub Copilot CLI"

# (Copilot event, cmem event, timeout in seconds)
HOOKS: list[tuple[str, str, int]] = [
    ("sessionStart", "context", 30),
    ("userPromptSubmitted", "session-init", 30),
    ("preToolUse", "file-context", 10),
    ("postToolUse", "observation", 30),
    ("postToolUseFailure", "observation", 30),
    ("agentStop", "summarize", 60),
    ("sessionEnd", "session-end", 10),
]
MCP_SERVER = "cmem"
HOOKS_FILE = "cmem.json"


def copilot_home() -> Path:
    base = os.environ.get("COPILOT_HOME")
    return Path(base).expanduser() if base else Path.home() / ".copilot"


def hooks_path(home: Path | None = None) -> Path:
    return (home or copilot_home()) / "hooks" / HOOKS_FILE


def mcp_path(home: Path | None = None) -> Path:
    return (home or copilot_home()) / "mcp-config.json"


def hooks_document(*, command: str) -> dict[str, Any]:
    hooks: dict[str, list[dict[str, Any]]] = {}
    for event, cmem_event, timeout in HOOKS:
        hooks.setdefault(event, []).append(
            {
                "type": "command",
                "bash": f"{shlex.quote(command)} hook copilot {cmem_event}",
                "timeoutSec": timeout,
            }
        )
    return {"version": 1, "hooks": hooks}


def detected() -> bool:
    return bool(shutil.which("copilot")) or copilot_home().is_dir()


def _mcp_entry(command: str) -> dict[str, Any]:
    return {"type": "local", "command": command, "args": ["mcp"], "tools": ["*"]}


def install(*, command: str, home: Path | None = None, mcp: bool = True) -> list[str]:
    path = hooks_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    wanted = hooks_document(command=command)
    lines = []
    try:
        current, original = installer.settings_read(path)
    except installer.InstallError:
        current, original = {}, path.read_bytes()  # ours, but broken: replaced (backed up)
    if original is not None and current == wanted:
        lines.append(f"cmem Copilot CLI hooks already installed in {path}")
    else:
        backup = installer.settings_write(path, wanted, original)
        lines.append(
            f"cmem Copilot CLI hooks installed in {path}"
            + (f" (backup: {backup})" if backup else "")
        )
    if mcp:
        lines.append(_mcp_set(mcp_path(home), _mcp_entry(command)))
    return lines


def _mcp_set(path: Path, entry: dict[str, Any] | None) -> str:
    """Set (or, with None, remove) cmem's server in mcp-config.json, keeping the others."""
    state, _ = installer.server_entry_set(path, key="mcpServers", name=MCP_SERVER, entry=entry)
    if state == "absent":
        return ""
    if state == "removed":
        return f"MCP server {MCP_SERVER!r} removed from {path}"
    if state == "unchanged":
        return f"MCP server {MCP_SERVER!r} already registered in {path}"
    command = entry["command"] if entry else ""  # "set" only happens with an entry
    return f"MCP server {MCP_SERVER!r} registered in {path} ({command} mcp)"


def uninstall(*, home: Path | None = None, keep_mcp: bool = False) -> list[str]:
    path = hooks_path(home)
    lines = [
        installer.file_remove_with_backup(path, "cmem Copilot CLI hooks")
        or f"no cmem hooks in {path}"
    ]
    if not keep_mcp:
        note = _mcp_set(mcp_path(home), None)
        if note:
            lines.append(note)
    return lines


def doctor_checks(*, home: Path | None = None) -> list[Any]:
    path = hooks_path(home)
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return [Check("fail", f"{path} is not JSON ({exc})", "run `cmem install --copilot` again")]
    events = set((data.get("hooks") or {}) if isinstance(data, dict) else {})
    missing = sorted({event for event, *_ in HOOKS} - events)
    if missing:
        checks = [
            Check(
                "fail",
                f"Copilot CLI hooks missing for {', '.join(missing)} in {path}",
                "run `cmem install --copilot`",
            )
        ]
    else:
        checks = [Check("ok", f"Copilot CLI hooks installed for all {len(HOOKS)} events in {path}")]
    for config in ("config.json", "settings.json"):
        try:
            settings = json.loads((path.parent.parent / config).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(settings, dict) and settings.get("disableAllHooks") is True:
            checks.append(
                Check(
                    "fail", f"disableAllHooks is true in {path.parent.parent / config}", "remove it"
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
                f"cmem's MCP server is not in {mcp_path(home)}",
                "run `cmem install --copilot`",
            )
        )
    return checks
