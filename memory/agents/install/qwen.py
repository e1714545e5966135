"""`cmem install --qwen` / `uninstall --qwen` / doctor: cmem's hooks and MCP server in Qwen
Code's user settings (`~/.qwen/settings.json`; `$QWEN_HOME/settings.json` when set, as Qwen
reads it).

Claude Code's hooks shape and event names (memory/agents/install/settings_hooks.py does the
work). Timeouts are in seconds (Qwen reads 1000 or more as legacy milliseconds);
`disableAllHooks: true` turns every hook off, which doctor reports.
"""

from __future__ import annotations

import os
from pathlib import Path

from memory.agents.install.settings_hooks import SettingsHooks, switched_off_by

name = "qwen"
label = "Qwen Code"


def qwen_home() -> Path:
    base = os.environ.get("QWEN_HOME")
    return Path(base).expanduser() if base else Path.home() / ".qwen"


AGENT = SettingsHooks(
    platform=name,
    label=label,
    binary="qwen",
    home=qwen_home,
    # (Qwen event, matcher or None, cmem event, timeout in seconds)
    hooks=(
        ("SessionStart", None, "context", 30),
        ("UserPromptSubmit", None, "session-init", 30),
        # Only read_file reads a whole file the gate can answer for.
        ("PreToolUse", "read_file", "file-context", 10),
        ("PostToolUse", None, "observation", 30),
        ("PostToolUseFailure", None, "observation", 30),
        ("Stop", None, "summarize", 60),
        ("SessionEnd", None, "session-end", 10),
    ),
    switches=switched_off_by("disableAllHooks", label),
)
detected = AGENT.detected
install = AGENT.install
uninstall = AGENT.uninstall
installed_commands = AGENT.installed_commands
doctor_checks = AGENT.doctor_checks
