"""Which way cmem reached Claude Code: its own hooks in settings.json, or the plugin.

Both at once would capture every event twice and refuse every read twice, so `cmem setup`,
`install` and `doctor` look for the other route. The route is recorded in the data dir
(`install-route`) because it decides the MCP tool names the model is told about: a plugin's
servers reach Claude Code as `mcp__plugin_<plugin>_<server>__<tool>`, `claude mcp`'s as
`mcp__<server>__<tool>`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from memory import config

Route = Literal["settings", "plugin"]
PLUGIN_NAME = "cmem"
SERVER_NAME = "cmem"
ROUTE_FILE = "install-route"


def plugin_installed(settings: Path) -> str:
    """The enabled cmem plugin's id (`cmem@<marketplace>`) in this settings file, or ""."""
    try:
        data = json.loads(settings.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    enabled = data.get("enabledPlugins") if isinstance(data, dict) else None
    if not isinstance(enabled, dict):
        return ""
    for plugin_id, on in enabled.items():
        if on is True and str(plugin_id).split("@", 1)[0] == PLUGIN_NAME:
            return str(plugin_id)
    return ""


def plugin_active_note(plugin_id: str) -> str:
    return (
        f"the Claude Code plugin {plugin_id} is installed and provides cmem's hooks and MCP "
        "server, so none are written to settings.json (to switch: "
        f"`claude plugin uninstall {plugin_id}`, then `cmem install`)"
    )


def route_record(route: Route) -> None:
    path = config.data_dir() / ROUTE_FILE
    try:
        if path.read_text().strip() == route:
            return
    except OSError:
        pass
    config.ensure_data_dir()
    config.write_atomic(path, f"{route}\n".encode())


def route_clear() -> None:
    """Forget the route (cmem is in neither): tool names fall back to the settings route's."""
    (config.data_dir() / ROUTE_FILE).unlink(missing_ok=True)


def route_current() -> Route:
    return "plugin" if config.install_route() == "plugin" else "settings"


# `claude plugin uninstall` edits Claude Code's own files; a minute is far more than it needs.
PLUGIN_UNINSTALL_TIMEOUT = 60


@dataclass(frozen=True)
class PluginRemoval:
    removed: bool
    message: str


def plugin_remove(plugin_id: str, *, settings: Path, default_settings: Path) -> PluginRemoval:
    """Remove the enabled plugin with Claude Code's own `claude plugin uninstall`, so Claude
    Code's records of it (settings, its plugin cache) stay consistent; cmem never edits them by
    hand. Done only when `claude` is on PATH and `settings` is the file that CLI edits (a
    `--settings-file` elsewhere is not its); otherwise the message says what to run."""
    manual = f"remove it with `claude plugin uninstall {plugin_id}`"
    claude = shutil.which("claude")
    if not claude:
        return PluginRemoval(False, f"`claude` is not on PATH, so {manual}")
    if settings.resolve() != default_settings.resolve():
        return PluginRemoval(False, f"{settings} is not Claude Code's user settings, so {manual}")
    try:
        done = subprocess.run(
            [claude, "plugin", "uninstall", plugin_id],
            capture_output=True,
            text=True,
            timeout=PLUGIN_UNINSTALL_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return PluginRemoval(
            False, f"`claude plugin uninstall {plugin_id}` failed ({exc}); {manual}"
        )
    # Judged by the settings file, not the exit code: the plugin is gone when it is not enabled.
    if plugin_installed(settings) != plugin_id:
        return PluginRemoval(
            True, f"Claude Code plugin {plugin_id} removed (`claude plugin uninstall`)"
        )
    said = " ".join((done.stderr or done.stdout).split())[:200]
    return PluginRemoval(
        False,
        f"`claude plugin uninstall {plugin_id}` left it enabled ({said or done.returncode}); {manual}",
    )
