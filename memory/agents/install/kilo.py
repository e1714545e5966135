"""`cmem install --kilo` / `uninstall --kilo` / doctor: cmem's plugin and MCP server in the
Kilo Code CLI's global config folder (`$XDG_CONFIG_HOME/kilo`, else `~/.config/kilo`).

Kilo is a fork of OpenCode and loads plugins the same way (every `.js`/`.ts` in `plugin/`
at start, no trust step), so this is OpenCode's installer pointed at Kilo's folder and
config file (`kilo.json`, MCP servers under `mcp`), with the plugin calling
`cmem hook kilo`. Kilo does not read OpenCode's folder (checked with 7.7.7), so a machine
with both gets one plugin in each and each session is captured once.
"""

from __future__ import annotations

import os
from pathlib import Path

from memory.agents.install import opencode

name = "kilo"
label = "Kilo Code CLI"
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


AGENT = opencode.PluginFolder(
    platform=name,
    label="Kilo",
    binary="kilo",
    home=kilo_home,
    config_file="kilo.json",
    source=lambda command: plugin_source(command=command),
)
detected = AGENT.detected
install = AGENT.install
uninstall = AGENT.uninstall
doctor_checks = AGENT.doctor_checks
