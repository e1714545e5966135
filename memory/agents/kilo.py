"""Kilo Code CLI payloads (docs/guide/agents/kilo-code.md) to and from HookEvent.

Kilo's CLI (`kilo`, 7.x) is a fork of OpenCode: it loads the same JavaScript plugins, with
the same hook names and payloads (`sessionID`, `tool`, `callID`, `args` {filePath…},
`output`), and offers the model the same tools (`read`, `edit`, `write`, `bash`). cmem
installs its OpenCode plugin into Kilo's own config folder, calling `cmem hook kilo
<event>`; this adapter is OpenCode's under Kilo's platform name, so its sessions are
Kilo's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memory.agents import opencode
from memory.agents.base import HookEvent, HookResult

platform = "kilo"

HOOK_EVENT_NAMES = opencode.HOOK_EVENT_NAMES
EVENTS = opencode.EVENTS
TOOLS = opencode.TOOLS
READ_TOOL = opencode.READ_TOOL
MCP_PREFIX = opencode.MCP_PREFIX


def parse(event: str, data: dict[str, Any]) -> HookEvent:
    return replace(opencode.parse(event, data), platform=platform)


def render(event: HookEvent, result: HookResult) -> dict[str, Any]:
    """The plugin's answer: {"deny": reason}, {"context": text} or {}."""
    return opencode.render(event, result)
