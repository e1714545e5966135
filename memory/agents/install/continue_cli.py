"""`cmem install --continue` / `uninstall --continue` / doctor: Continue CLI (`cn`), which runs
no hooks (docs/guide/agents/continue-cli.md), so cmem follows its session files instead.

Install does two things, and uninstall undoes only those:
- turns watching on: CLAUDE_MEM_WATCH gains `continue` in cmem's settings.json, and the
  worker's supervisor runs `cmem watch` (memory/watch/) while the worker runs;
- registers cmem's MCP server (recall: search, get_observations…) in Continue's
  `config.yaml` (`$CONTINUE_GLOBAL_DIR`, default ~/.continue): an entry named `cmem` in its
  `mcpServers` list, the others kept, the file backed up first. It is YAML: what cmem writes
  back keeps every key and value of the user's, not their comments (the backup has them).
  With no config.yaml, none is made: `cn` would then take it as the user's whole
  configuration instead of the one it loads by default.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import yaml

from memory import config
from memory.agents.install.check import Check
from memory.agents.install.claude_code import InstallError, custom_data_dir, write_with_backup

name = "continue"
label = "Continue CLI"
MCP_SERVER = "cmem"
WATCH_KEY = "CLAUDE_MEM_WATCH"


def continue_home() -> Path:
    base = os.environ.get("CONTINUE_GLOBAL_DIR")
    return Path(base).expanduser() if base else Path.home() / ".continue"


def config_path(home: Path | None = None) -> Path:
    return (home or continue_home()) / "config.yaml"


def detected() -> bool:
    return bool(shutil.which("cn")) or continue_home().is_dir()


def mcp_entry(command: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": MCP_SERVER, "command": command, "args": ["mcp"]}
    data_dir = custom_data_dir()
    if data_dir:
        entry["env"] = {"CLAUDE_MEM_DATA_DIR": data_dir}
    return entry


def _read(path: Path) -> tuple[dict[str, Any] | None, bytes | None]:
    """(config, original bytes); (None, None) when there is no file. InstallError when it
    cannot be used (not YAML, not a mapping, mcpServers not a list)."""
    try:
        original = path.read_bytes()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        raise InstallError(f"cannot read {path}: {exc}") from None
    try:
        data = yaml.safe_load(original.decode("utf-8-sig")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InstallError(
            f"{path} is not YAML ({str(exc).splitlines()[0]}); fix it first"
        ) from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} is not a YAML mapping; fix it first")
    if not isinstance(data.get("mcpServers") or [], list):
        raise InstallError(f"mcpServers in {path} is not a list; fix it first")
    return data, original


def _write(path: Path, data: dict[str, Any], original: bytes) -> Path | None:
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
    return write_with_backup(path, text.encode(), original)


def _servers(data: dict[str, Any]) -> list[Any]:
    return list(data.get("mcpServers") or [])


def _is_ours(server: Any) -> bool:
    return isinstance(server, dict) and server.get("name") == MCP_SERVER


def _watched() -> list[str]:
    return [a.strip() for a in config.get(WATCH_KEY).split(",") if a.strip()]


def _start_from_now() -> None:
    """The watcher's state begins now: the sessions already on disk are not taken in (their
    compression would be a cost nobody asked for), what is added to them from now on is."""
    path = config.data_dir() / "watch" / "continue.json"
    try:
        state = json.loads(path.read_text())
    except FileNotFoundError:
        state = {"version": 1, "files": {}}
    except (OSError, ValueError):
        return  # the watcher reports a state it cannot read; not ours to replace
    if isinstance(state, dict) and "since" not in state:
        state["since"] = time.time_ns()
        config.write_atomic(path, json.dumps(state).encode())


def install(*, command: str, home: Path | None = None, mcp: bool = True) -> list[str]:
    lines = []
    watched = _watched()
    if name in watched:
        lines.append(
            f"watching Continue's sessions already on ({WATCH_KEY} in {config.settings_path()})"
        )
    else:
        config.save({WATCH_KEY: ",".join([*watched, name])})
        _start_from_now()
        lines.append(
            f"watching Continue's sessions ({continue_home() / 'sessions'}) turned on: {WATCH_KEY}"
            f" in {config.settings_path()}; the running worker follows them within seconds"
        )
    if not mcp:
        return lines
    path = config_path(home)
    data, original = _read(path)
    if data is None or original is None:
        lines.append(
            f"MCP server not registered: no {path} (cn then uses its default configuration);"
            f" add `mcpServers: [{{name: cmem, command: {command}, args: [mcp]}}]` to the"
            " config you use, or create it and run `cmem install --continue` again"
        )
        return lines
    entry = mcp_entry(command)
    servers = _servers(data)
    if [s for s in servers if _is_ours(s)] == [entry]:
        lines.append(f"MCP server {MCP_SERVER!r} already registered in {path}")
        return lines
    data["mcpServers"] = [*(s for s in servers if not _is_ours(s)), entry]
    backup = _write(path, data, original)
    lines.append(
        f"MCP server {MCP_SERVER!r} registered in {path} ({command} mcp) (backup: {backup})"
    )
    return lines


def uninstall(*, home: Path | None = None, keep_mcp: bool = False) -> list[str]:
    lines = []
    watched = _watched()
    if name in watched:
        config.save({WATCH_KEY: ",".join(a for a in watched if a != name)})
        lines.append(
            f"watching Continue's sessions turned off ({WATCH_KEY} in {config.settings_path()})"
        )
    if keep_mcp:
        return lines
    path = config_path(home)
    data, original = _read(path)
    if data is None or original is None:
        return lines
    servers = _servers(data)
    if not any(_is_ours(s) for s in servers):
        return lines
    kept = [s for s in servers if not _is_ours(s)]
    if kept:
        data["mcpServers"] = kept
    else:
        data.pop("mcpServers", None)
    backup = _write(path, data, original)
    lines.append(f"MCP server {MCP_SERVER!r} removed from {path} (backup: {backup})")
    return lines


def _progress(sessions: Path) -> str:
    """How many of the session files `cmem watch` has read (its state: memory/watch/follower.py)."""
    total = len([p for p in sessions.glob("*.json") if p.name != "sessions.json"])
    try:
        state = json.loads((config.data_dir() / "watch" / "continue.json").read_text())
        read = len(state.get("files") or {})
    except (OSError, ValueError, AttributeError):
        read = 0
    return f"{read} of {total} session files read"


def doctor_checks(*, home: Path | None = None) -> list[Any]:
    """Watching on, the session folder there, the MCP server registered. Nothing when cmem
    is not installed for Continue."""
    if name not in _watched():
        return []
    again = "run `cmem install --continue`"
    sessions = continue_home() / "sessions"
    checks = [
        Check("ok", f"Continue CLI sessions watched ({sessions}): {_progress(sessions)}")
        if sessions.is_dir()
        else Check(
            "warn", f"Continue CLI sessions folder {sessions} does not exist yet", "run `cn` once"
        )
    ]
    try:
        data, _ = _read(config_path(home))
    except InstallError as exc:
        return [*checks, Check("fail", str(exc), again)]
    if data is None or not any(_is_ours(s) for s in _servers(data)):
        checks.append(
            Check("warn", f"cmem's MCP server is not registered in {config_path(home)}", again)
        )
    return checks
