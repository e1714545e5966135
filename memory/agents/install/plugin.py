"""The Claude Code plugin in the repo (`plugin/`, listed by `.claude-plugin/marketplace.json`).

`claude plugin marketplace add <repo>` then `claude plugin install cmem@cmem` gives the same
hooks (events, matchers, timeouts) and MCP server as `cmem install`. The plugin's hooks run
`plugin/bin/cmem-hook`, which calls the installed `cmem` and, when there is none, says so in
one stderr line and exits 0. `plugin_files()` is the one source of the plugin's JSON files;
tests/test_plugin.py checks the committed files match it.
"""

from __future__ import annotations

from typing import Any

from memory import config
from memory.agents.install.claude_code import HOOKS

MARKETPLACE = "cmem"
PLUGIN = "cmem"
DESCRIPTION = "Persistent memory for coding agents: captures tool use, injects past work, serves search over MCP."


def plugin_hooks() -> dict[str, list[dict[str, Any]]]:
    entries: dict[str, list[dict[str, Any]]] = {}
    for claude_event, matcher, event, timeout, is_async in HOOKS:
        hook: dict[str, Any] = {
            "type": "command",
            "command": "sh",
            "args": ["${CLAUDE_PLUGIN_ROOT}/bin/cmem-hook", event],
            "timeout": timeout,
        }
        if is_async:
            hook["async"] = True
        group: dict[str, Any] = {"hooks": [hook]}
        if matcher is not None:
            group = {"matcher": matcher, **group}
        entries.setdefault(claude_event, []).append(group)
    return entries


def plugin_files() -> dict[str, dict[str, Any]]:
    """Repo-relative path -> JSON content of every generated plugin file."""
    return {
        ".claude-plugin/marketplace.json": {
            "name": MARKETPLACE,
            "owner": {"name": "cmem"},
            "plugins": [{"name": PLUGIN, "source": "./plugin", "description": DESCRIPTION}],
        },
        "plugin/.claude-plugin/plugin.json": {
            "name": PLUGIN,
            "version": config.VERSION,
            "description": DESCRIPTION,
            "author": {"name": "cmem"},
        },
        "plugin/hooks/hooks.json": {"description": "cmem memory hooks", "hooks": plugin_hooks()},
        "plugin/.mcp.json": {"mcpServers": {"cmem": {"command": "cmem", "args": ["mcp"]}}},
    }
