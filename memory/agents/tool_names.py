"""What the agent calls cmem's MCP tools: the name the model must write to call one.

The gate's refusal and the SessionStart index tell the model which tool to call next; a
bare `get_observations` is not a tool it has. Each agent qualifies MCP tools its own way,
and Claude Code's naming also depends on how cmem was installed:

- Claude Code, `cmem install` (server "cmem" in ~/.claude.json): `mcp__cmem__<tool>`,
  deferred behind Claude Code's tool search, which finds it by that name;
- Claude Code, through a plugin: `mcp__plugin_<plugin>_cmem__<tool>`;
- Codex (`[mcp_servers.cmem]` or the Codex plugin): `mcp__cmem__<tool>`. Codex 0.171.0 sends
  the tools as the Responses namespace `mcp__cmem` (the call is `<tool>` in it), names MCP
  tools `mcp__<server>__<tool>` in its own instructions, plugin ones included, and its
  hooks report the call under that name (tests/codex/e2e);
- Qwen Code (`mcpServers.cmem` in ~/.qwen/settings.json): `mcp__cmem__<tool>`, as Claude Code;
- any other agent: the bare tool name.

The install route comes from CLAUDE_MEM_INSTALL_ROUTE: `install` (the default) or
`plugin:<plugin name>`.
"""

from __future__ import annotations

from dataclasses import dataclass

SERVER = "cmem"
TOOLS = (
    "search",
    "timeline",
    "get_observations",
    "smart_outline",
    "smart_unfold",
    "get_tool_uses",
    "smart_search",
    "remember",
    "memory_correct",
)


def mcp_tool_name(tool: str, *, platform: str, route: str = "") -> str:
    """The name under which `platform` shows cmem's `tool` to its model."""
    route = (route or "install").strip()
    if platform == "claude-code":
        if route.startswith("plugin:") and route[len("plugin:") :].strip():
            plugin = route[len("plugin:") :].strip()
            return f"mcp__plugin_{plugin}_{SERVER}__{tool}"
        return f"mcp__{SERVER}__{tool}"
    if platform in {"codex", "qwen"}:
        return f"mcp__{SERVER}__{tool}"
    return tool


@dataclass(frozen=True)
class ToolNames:
    """cmem's tools as one agent sees them; attribute access by bare name."""

    search: str = "search"
    timeline: str = "timeline"
    get_observations: str = "get_observations"
    smart_outline: str = "smart_outline"
    smart_unfold: str = "smart_unfold"
    get_tool_uses: str = "get_tool_uses"
    smart_search: str = "smart_search"
    remember: str = "remember"
    memory_correct: str = "memory_correct"


def tool_names(*, platform: str, route: str = "") -> ToolNames:
    return ToolNames(**{t: mcp_tool_name(t, platform=platform, route=route) for t in TOOLS})


# How agents qualify an MCP tool after the server's name: Claude Code and Codex `__`
# (`mcp__cmem__x`, `mcp__plugin_cmem_cmem__x`), others `_`, `-` or `/`.
_QUALIFIERS = ("__", "_", "-", "/")


def is_cmem_tool(name: str, tool: str) -> bool:
    """Whether `name`, as a hook payload spells it, is cmem's MCP `tool` under any install
    route or agent (the bare name too: agents that do not qualify MCP tools). Stdlib only:
    the hook client calls it to see a `work_state_write` call."""
    if not name or not name.endswith(tool):
        return False
    if name == tool:
        return True
    head = name[: -len(tool)]
    for q in _QUALIFIERS:
        before = head[: -len(SERVER + q)] if head.endswith(SERVER + q) else None
        # `mcp__notcmem__x` is another server's tool: the server name starts at a boundary.
        if before is not None and (not before or before[-1] in "_-/"):
            return True
    return False
