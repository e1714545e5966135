"""The install route, which names cmem's MCP tools in the gate's text. Whether cmem reached
Claude Code as a plugin or through its settings (memory/agents/install/routes.py records it)."""

from __future__ import annotations

import os

from memory.config.sources import data_dir, stat_settled
from memory.config.values import get

MCP_TOOLS = (
    "search", "timeline", "get_observations", "smart_outline", "smart_unfold", "get_tool_uses",
)  # fmt: skip


def install_route() -> str:
    """`plugin` when cmem reached Claude Code as a plugin, else `settings`."""
    path = str(data_dir() / "install-route")
    try:
        st = os.stat(path)
    except OSError:
        return "settings"
    # Every gate decision names tools by the route: the answer is kept per (inode, mtime,
    # size) of the file, re-read while the file is not settled (as read_file does).
    key = (st.st_ino, st.st_mtime_ns, st.st_size)
    cached = _install_routes.get(path)
    if cached is not None and cached[0] == key and stat_settled(st.st_mtime_ns):
        return cached[1]
    try:
        with open(path) as fh:
            route = "plugin" if fh.read().strip() == "plugin" else "settings"
    except OSError:
        return "settings"
    _install_routes[path] = (key, route)
    return route


_install_routes: dict[str, tuple[tuple[int, int, int], str]] = {}


def install_route_setting(settings: dict[str, str] | None = None) -> str:
    """The route for naming tools (memory/agents/tool_names.py): CLAUDE_MEM_INSTALL_ROUTE when
    set to anything but its default, else what the installer or the plugin recorded
    (`plugin` means the marketplace plugin `cmem`)."""
    explicit = get("CLAUDE_MEM_INSTALL_ROUTE", settings).strip()
    if explicit and explicit != "install":
        return explicit
    return "plugin:cmem" if install_route() == "plugin" else "install"
