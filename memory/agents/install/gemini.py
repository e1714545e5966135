"""`cmem install --gemini` / `uninstall --gemini` / doctor: cmem's hooks and MCP server in
the Gemini CLI's user settings (`~/.gemini/settings.json`; `$GEMINI_CLI_HOME/.gemini` when set).

Claude Code's hooks shape (memory/agents/install/settings_hooks.py does the work). User-level
hooks need no trust step (Gemini fingerprints and asks only for project-level ones); Gemini's
timeouts are in milliseconds.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from memory.agents.install.check import Check
from memory.agents.install.settings_hooks import SettingsHooks

name = "gemini"
label = "Gemini CLI"


def gemini_home() -> Path:
    base = os.environ.get("GEMINI_CLI_HOME")
    return (Path(base).expanduser() if base else Path.home()) / ".gemini"


def _switches(data: dict[str, Any], path: Path) -> list[Check]:
    config = data.get("hooksConfig") or {}
    found = []
    if config.get("enabled", True) is False:
        found.append(
            Check(
                "fail",
                f"hooksConfig.enabled is false in {path}: Gemini runs no hooks",
                "set it to true",
            )
        )
    off = sorted(set(config.get("disabled") or []) & {f"cmem-{e}" for _, _, e, _ in AGENT.hooks})
    if off:
        found.append(
            Check(
                "fail",
                f"cmem hooks disabled in Gemini: {', '.join(off)}",
                f"remove them from hooksConfig.disabled in {path}",
            )
        )
    return found


AGENT = SettingsHooks(
    platform=name,
    label=label,
    binary="gemini",
    home=gemini_home,
    # (Gemini event, matcher or None, cmem event, timeout in ms)
    hooks=(
        ("SessionStart", None, "context", 30_000),
        ("BeforeAgent", None, "session-init", 30_000),
        # Only read_file reads a whole file the gate can answer for; Gemini's BeforeTool
        # matcher is a regex over the tool name.
        ("BeforeTool", "^read_file$", "file-context", 10_000),
        ("AfterTool", None, "observation", 30_000),
        ("AfterAgent", None, "summarize", 60_000),
        # Gemini does not wait for SessionEnd hooks; the spool keeps what a killed one loses.
        ("SessionEnd", None, "session-end", 10_000),
    ),
    switches=_switches,
)
detected = AGENT.detected
install = AGENT.install
uninstall = AGENT.uninstall
installed_commands = AGENT.installed_commands
doctor_checks = AGENT.doctor_checks
