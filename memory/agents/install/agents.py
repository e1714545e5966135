"""Gemini CLI, Copilot CLI, OpenCode, Qwen Code, the Kilo Code CLI, Factory Droid and Continue CLI behind one interface, for install, doctor and setup.

Each module has the same entries: `detected()`, `install(command=, home=, mcp=)`,
`uninstall(home=, keep_mcp=)`, `doctor_checks(home=)`. `cmem setup` installs for
`agents_detected()`."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from memory.agents.install import (
    claude_code,
    codex,
    continue_cli,
    copilot,
    droid,
    gemini,
    kilo,
    opencode,
    qwen,
    routes,
)

AGENTS: dict[str, ModuleType] = {
    m.name: m for m in (gemini, copilot, opencode, qwen, kilo, droid, continue_cli)
}


def agent_module(name: str) -> ModuleType:
    try:
        return AGENTS[name]
    except KeyError:
        raise ValueError(f"unknown agent {name!r}; expected one of {', '.join(AGENTS)}") from None


def agents_detected() -> list[str]:
    """The agents whose CLI is on the PATH or whose config folder exists, in AGENTS order."""
    return [name for name, module in AGENTS.items() if module.detected()]


def agent_install(
    name: str, *, command: str, home: Path | None = None, mcp: bool = True
) -> list[str]:
    """Install cmem for one agent; the report's lines. Raises InstallError (file unusable)."""
    return [
        line for line in agent_module(name).install(command=command, home=home, mcp=mcp) if line
    ]


def agent_uninstall(name: str, *, home: Path | None = None, keep_mcp: bool = False) -> list[str]:
    return [line for line in agent_module(name).uninstall(home=home, keep_mcp=keep_mcp) if line]


def agents_doctor_checks() -> list[Any]:
    """Doctor rows for every agent cmem is installed in (nothing for the others)."""
    checks: list[Any] = []
    for module in AGENTS.values():
        checks.extend(module.doctor_checks())
    return checks


def hooks_installed() -> list[str]:
    """The agents whose settings hold cmem's hooks ("Claude Code", "Codex", ...), read from
    their files the way `cmem doctor` reads them: the empty timeline says "start a session"
    to someone who ran `cmem setup`, and "install" only to someone who did not."""
    found: list[str] = []
    settings = claude_code.claude_settings_path()
    try:
        hooked = bool(claude_code.installed_events(settings))
    except claude_code.InstallError:
        hooked = False
    if hooked or routes.plugin_installed(settings):
        found.append("Claude Code")
    if codex.installed_commands(codex.hooks_path()):
        found.append("Codex")
    for module in AGENTS.values():
        try:
            checks = module.doctor_checks()
        except OSError:  # an unreadable file is doctor's to report, not the dashboard's
            checks = []
        if checks:
            found.append(module.label)
    return found
