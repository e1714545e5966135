"""Registering cmem's MCP server with Claude Code, and the plugin folder that is the other way in.

User scope lives in `~/.claude.json` under `mcpServers`: that file also holds Claude Code's
own state (projects, history, flags), so it is read, changed in one key and written back
atomically, and never rewritten when it cannot be parsed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memory import config
from memory.agents.install.claude_code import hook_entries

SERVER_NAME = "cmem"
HOOK_TIMEOUTS = {
    "context": 60,
    "session-init": 30,
    "observation": 30,
    "file-context": 10,
    "summarize": 60,
    "session-end": 30,
}


def _server_entry(command: str, data_dir: str | None = None) -> dict[str, Any]:
    env = {"CLAUDE_MEM_DATA_DIR": data_dir} if data_dir else {}
    return {"type": "stdio", "command": command, "args": ["mcp"], "env": env}


def _read_json(path: Path) -> dict[str, Any] | None:
    """The file's object, {} when absent, None when it exists but is not a JSON object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_json(path: Path, data: dict[str, Any]) -> None:
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    config.write_atomic(
        path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode(), mode=mode
    )


def mcp_registered(*, home: Path) -> dict[str, Any] | None:
    """cmem's MCP server entry in `~/.claude.json`, or None (for doctor)."""
    data = _read_json(home / ".claude.json") or {}
    servers = data.get("mcpServers")
    entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    return entry if isinstance(entry, dict) else None


def mcp_register(*, home: Path, command: str, data_dir: str | None = None) -> str:
    """Register `cmem mcp` at user scope; returns a one-line report."""
    path = home / ".claude.json"
    data = _read_json(path)
    if data is None:
        return f"MCP server not registered: {path} is not a JSON object (fix it, then run `cmem install` again)"
    servers = data.get("mcpServers")
    if not isinstance(servers, dict):
        servers = {}
    entry = _server_entry(command, data_dir)
    if servers.get(SERVER_NAME) == entry:
        return f"MCP server {SERVER_NAME!r} already registered in {path}"
    data["mcpServers"] = {**servers, SERVER_NAME: entry}
    _write_json(path, data)
    return f"MCP server {SERVER_NAME!r} registered in {path} ({command} mcp)"


def mcp_unregister(*, home: Path) -> str:
    """Remove cmem's entry (and only it); returns a one-line report, empty when there was none."""
    path = home / ".claude.json"
    data = _read_json(path)
    if (
        not data
        or not isinstance(data.get("mcpServers"), dict)
        or SERVER_NAME not in data["mcpServers"]
    ):
        return ""
    data["mcpServers"] = {k: v for k, v in data["mcpServers"].items() if k != SERVER_NAME}
    _write_json(path, data)
    return f"MCP server {SERVER_NAME!r} removed from {path}"


def plugin_dir_write(*, directory: Path, command: str) -> str:
    """Write a Claude Code plugin folder (`claude --plugin-dir DIR`): manifest, hooks, MCP server."""
    manifest = {
        "name": "cmem",
        "version": config.VERSION,
        "description": "Persistent memory for coding agents: captures tool use, injects past work, serves search over MCP.",
        "author": {"name": "cmem"},
    }
    files = {
        directory / ".claude-plugin" / "plugin.json": manifest,
        directory / "hooks" / "hooks.json": {
            "description": "cmem memory hooks",
            # The very entries `cmem install` writes into settings.json: one builder for both.
            "hooks": hook_entries(command=command),
        },
        directory / ".mcp.json": {"mcpServers": {SERVER_NAME: _server_entry(command)}},
    }
    for path, data in files.items():
        config.write_atomic(path, (json.dumps(data, indent=2) + "\n").encode(), mode=0o644)
    return f"Claude Code plugin written to {directory} (use: claude --plugin-dir {directory})"
