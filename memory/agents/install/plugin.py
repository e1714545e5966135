"""The Claude Code plugin in the repo (`plugin/`, listed by `.claude-plugin/marketplace.json`).

`claude plugin marketplace add <repo>` then `claude plugin install cmem@cmem` gives the same
hooks (events, matchers, timeouts) and MCP server as `cmem install`. The plugin's hooks run
`plugin/bin/cmem-hook`, which calls the installed `cmem` and, when there is none, says so in
one stderr line and exits 0. `plugin_files()` is the one source of the plugin's JSON files;
tests/agents/test_install_routes.py checks the committed files match it.

The Codex plugin (`codex-plugin/`, listed by `.agents/plugins/marketplace.json`, the form
Codex 0.171.0 reads) carries cmem's MCP server only: `codex plugin marketplace add <repo>`
then `codex plugin add cmem@cmem`. Codex names its tools `mcp__cmem__<tool>`, as it does a
`[mcp_servers.cmem]` that `cmem install --codex` writes. Codex's hooks need trust recorded
per hook, so they stay with `cmem install --codex` (docs/guide/agents/codex.md).
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
        **codex_plugin_files(),
    }


def codex_plugin_files() -> dict[str, dict[str, Any]]:
    """The Codex marketplace and plugin: repo-relative path -> JSON content."""
    return {
        ".agents/plugins/marketplace.json": {
            "name": MARKETPLACE,
            "interface": {"displayName": "cmem"},
            "plugins": [
                {
                    "name": PLUGIN,
                    # Codex resolves it from the marketplace root (the repo), `./` required.
                    "source": {"source": "local", "path": "./codex-plugin"},
                    "policy": {"installation": "AVAILABLE", "authentication": "ON_INSTALL"},
                    "category": "Productivity",
                }
            ],
        },
        "codex-plugin/.codex-plugin/plugin.json": {
            "name": PLUGIN,
            "version": config.VERSION,
            "description": DESCRIPTION,
            "author": {"name": "cmem"},
            "mcpServers": "./.mcp.json",
            "interface": {
                "displayName": "cmem",
                "shortDescription": "Persistent memory: search past sessions over MCP",
                "developerName": "cmem",
                "category": "Productivity",
            },
        },
        "codex-plugin/.mcp.json": {"mcpServers": {"cmem": {"command": "cmem", "args": ["mcp"]}}},
    }
