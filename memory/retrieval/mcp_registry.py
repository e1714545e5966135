"""Tools that apps built on memory add to cmem's MCP server, registered at startup.

memory never imports those apps (memory/extensions.py), and the MCP server imports no
Django, so this list is plain Python: an app's `AppConfig.ready()` (which `cmem mcp` runs,
being a management command) registers its tool functions here, and
memory.retrieval.mcp_server adds them to the server before it starts serving.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class McpTool:
    fn: Callable[..., str]
    description: str


_tools: list[McpTool] = []


def mcp_tool_register(fn: Callable[..., str], *, description: str = "") -> None:
    """Add `fn` (typed arguments, returns the reply text) once; its docstring describes it
    unless `description` is given."""
    if any(t.fn is fn for t in _tools):
        return
    _tools.append(McpTool(fn=fn, description=description or (fn.__doc__ or "").strip()))


def mcp_tools() -> list[McpTool]:
    return list(_tools)
