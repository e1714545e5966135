"""cmem's MCP server in Codex's config: `[mcp_servers.cmem]` in `$CODEX_HOME/config.toml`.

`cmem install --codex` writes it (the absolute `cmem` and `mcp`, with `CLAUDE_MEM_DATA_DIR`
when the data dir is not the default one: Codex starts MCP servers with a few variables of
its own environment only). config.toml is the user's file and also holds what Codex writes
(hook trust, marketplaces, plugins): it is changed through a round-trip parser, so every
other table, comment and blank line stays as it was; a backup is written before any change
and a second install changes nothing. An `[mcp_servers.cmem]` that does not run `cmem mcp`
is the user's own and is never replaced or removed.

Codex 0.171.0 sends the server's tools to the model as the Responses API namespace
`mcp__cmem` (a call is `get_observations` in that namespace) and its own instructions name
MCP tools `mcp__<server>__<tool>`: the gate's menu says `mcp__cmem__get_observations`
(memory/agents/tool_names.py).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from memory.agents.install.check import Check
from memory.agents.install.claude_code import write_with_backup

SERVER = "cmem"
KEY = "mcp_servers"


@dataclass
class McpReport:
    path: Path
    state: str  # "set" | "unchanged" | "removed" | "absent" | "foreign" | "unreadable"
    backup: Path | None = None

    def line(self) -> str:
        backup = f" (backup: {self.backup})" if self.backup else ""
        return {
            "set": f"cmem MCP server registered in {self.path} [{KEY}.{SERVER}]{backup}",
            "unchanged": f"cmem MCP server already registered in {self.path}",
            "removed": f"cmem MCP server removed from {self.path}{backup}",
            "absent": "",
            "foreign": (
                f"[{KEY}.{SERVER}] in {self.path} is not cmem's (it does not run `cmem mcp`): "
                "left as it is; rename it to let cmem register its server"
            ),
            "unreadable": (
                f"cmem MCP server not registered: {self.path} is not valid TOML "
                "(fix it, then run `cmem install --codex` again)"
            ),
        }[self.state]


def config_path(home: Path) -> Path:
    return home / "config.toml"


def server_entry(*, command: str, data_dir: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": command, "args": ["mcp"]}
    if data_dir:
        entry["env"] = {"CLAUDE_MEM_DATA_DIR": data_dir}
    return entry


def is_cmem_server(entry: Any) -> bool:
    """Whether a `[mcp_servers.*]` table runs cmem's MCP server (any cmem, any data dir)."""
    if not isinstance(entry, dict):
        return False
    args = entry.get("args")
    return (
        Path(str(entry.get("command") or "")).name == "cmem"
        and isinstance(args, list)
        and args[:1] == ["mcp"]
    )


def _plain(value: Any) -> Any:
    """A tomlkit value as plain Python (dicts, lists, strings) for comparison."""
    return value.unwrap() if hasattr(value, "unwrap") else value


def _read(path: Path) -> tuple[tomlkit.TOMLDocument, bytes | None] | None:
    try:
        original = path.read_bytes()
    except FileNotFoundError:
        return tomlkit.document(), None
    try:
        return tomlkit.parse(original.decode("utf-8")), original
    except (UnicodeDecodeError, TOMLKitError, ValueError):
        return None


def _write(path: Path, doc: tomlkit.TOMLDocument, original: bytes | None) -> Path | None:
    return write_with_backup(path, tomlkit.dumps(doc).encode("utf-8"), original)


def _entry_table(entry: dict[str, Any]) -> Any:
    table = tomlkit.table()
    table["command"] = entry["command"]
    table["args"] = entry["args"]
    if entry.get("env"):
        env = tomlkit.inline_table()
        env.update(entry["env"])
        table["env"] = env
    table.add(tomlkit.nl())  # a blank line before whatever table follows
    return table


def mcp_register(*, home: Path, command: str, data_dir: str | None = None) -> McpReport:
    """Add (or bring up to date) cmem's `[mcp_servers.cmem]`, keeping everything else."""
    path = config_path(home)
    read = _read(path)
    if read is None:
        return McpReport(path, "unreadable")
    doc, original = read
    entry = server_entry(command=command, data_dir=data_dir)
    servers = doc.get(KEY)
    if servers is not None and not isinstance(servers, dict):
        return McpReport(path, "unreadable")
    current = _plain(servers.get(SERVER)) if servers is not None else None
    if current is not None and not is_cmem_server(current):
        return McpReport(path, "foreign")
    if current is not None and {k: current.get(k) for k in ("command", "args", "env")} == {
        "command": entry["command"],
        "args": entry["args"],
        "env": entry.get("env"),
    }:
        return McpReport(path, "unchanged")
    if servers is None:
        # A super-table: only `[mcp_servers.cmem]` is written, no empty `[mcp_servers]`.
        servers = tomlkit.table(is_super_table=True)
        doc[KEY] = servers
    if current is not None:
        # Keep what the user added to cmem's table (timeouts, enabled_tools…).
        table = servers[SERVER]
        table["command"] = entry["command"]
        table["args"] = entry["args"]
        if entry.get("env"):
            table["env"] = _entry_table(entry)["env"]
        elif "env" in table:
            del table["env"]
    else:
        servers[SERVER] = _entry_table(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    return McpReport(path, "set", _write(path, doc, original))


def mcp_unregister(*, home: Path) -> McpReport:
    """Remove cmem's `[mcp_servers.cmem]` (only when it runs `cmem mcp`), nothing else."""
    path = config_path(home)
    read = _read(path)
    if read is None:
        return McpReport(path, "unreadable")
    doc, original = read
    servers = doc.get(KEY)
    if not isinstance(servers, dict) or SERVER not in servers:
        return McpReport(path, "absent")
    if not is_cmem_server(_plain(servers[SERVER])):
        return McpReport(path, "foreign")
    del servers[SERVER]
    if not servers:
        del doc[KEY]
    return McpReport(path, "removed", _write(path, doc, original))


def mcp_registered(home: Path) -> dict[str, Any] | None:
    """cmem's `[mcp_servers.cmem]` as Codex would read it, or None."""
    try:
        data = tomllib.loads(config_path(home).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    entry = (data.get(KEY) or {}).get(SERVER)
    return entry if is_cmem_server(entry) else None


def mcp_doctor_checks(home: Path) -> list[Check]:
    """`cmem doctor`: is cmem's MCP server registered with Codex and can it start?"""
    entry = mcp_registered(home)
    path = config_path(home)
    hint = "run `cmem install --codex` (or add the cmem plugin: docs/guide/agents/codex.md)"
    if entry is None:
        return [Check("warn", f"cmem MCP server not in {path}: Codex has no cmem tools", hint)]
    if entry.get("enabled") is False:
        return [Check("fail", f"[{KEY}.{SERVER}] in {path} has enabled = false", hint)]
    command = Path(str(entry["command"]))
    if command.is_absolute() and not command.exists():
        return [Check("fail", f"cmem MCP server command {command} does not exist", hint)]
    return [Check("ok", f"cmem MCP server in {path} ({command} mcp)")]
