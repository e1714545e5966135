"""`cmem install --droid` / `uninstall --droid` / doctor: cmem's hooks in Factory Droid's
user settings (`~/.factory/settings.json`; `$FACTORY_HOME_OVERRIDE/.factory` when set, as
Droid reads it) and its MCP server in `~/.factory/mcp.json`.

Claude Code's hooks shape and event names (memory/agents/install/settings_hooks.py does the
work). Timeouts are in seconds; `hooksDisabled: true` turns every hook off, which doctor
reports.
"""

from __future__ import annotations

import os
from pathlib import Path

from memory.agents.install.settings_hooks import SettingsHooks, switched_off_by

name = "droid"
label = "Factory Droid"


def droid_home() -> Path:
    base = os.environ.get("FACTORY_HOME_OVERRIDE")
    return (Path(base).expanduser() if base else Path.home()) / ".factory"


AGENT = SettingsHooks(
    platform=name,
    label=label,
    binary="droid",
    home=droid_home,
    # (Droid event, matcher or None, cmem event, timeout in seconds)
    hooks=(
        ("SessionStart", None, "context", 30),
        ("UserPromptSubmit", None, "session-init", 30),
        # Only Read reads a whole file the gate can answer for.
        ("PreToolUse", "Read", "file-context", 10),
        ("PostToolUse", None, "observation", 30),
        ("Stop", None, "summarize", 60),
        ("SessionEnd", None, "session-end", 10),
    ),
    switches=switched_off_by("hooksDisabled", label),
    mcp_file="mcp.json",
    mcp_entry=lambda command: {"type": "stdio", "command": command, "args": ["mcp"]},
)
detected = AGENT.detected
install = AGENT.install
uninstall = AGENT.uninstall
installed_commands = AGENT.installed_commands
doctor_checks = AGENT.doctor_checks
