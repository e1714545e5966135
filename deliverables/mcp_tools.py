"""`work_state_write`, the MCP tool with which the agent attaches files to the current request.

The MCP server cannot tell which request a call belongs to, so this function records
nothing: it only says what will happen. The call's PostToolUse hook knows the session and
the prompt; it reads the files itself (memory/capture/handover.py) and the worker records
them on that request's My Work card, marked attached (deliverables/handover.py). Registered
into memory.retrieval.mcp_registry by `mcp_tools_register` (DeliverablesConfig.ready(), and
`cmem mcp`, which starts without Django); imports no Django.
"""

from __future__ import annotations

import os

from memory.retrieval import mcp_registry

MAX_PATHS = 50


def mcp_tools_register() -> None:
    """Add this app's tools to cmem's MCP server (memory.retrieval.mcp_registry)."""
    mcp_registry.mcp_tool_register(work_state_write)


def work_state_write(paths: list[str], title: str = "", note: str = "") -> str:
    """Attach files you produced for the user (a report, slides, a page, a chart) to the
    current request, so they appear on its card in cmem's My Work page, marked attached,
    with an optional title and note. paths: absolute paths of regular files (or relative
    to the working folder). Copies are kept even after the files are deleted. Symlinks,
    special files, credentials and files over the size cap are not attached."""
    named = [p for p in (paths or []) if isinstance(p, str) and p.strip()]
    if not named:
        # Imported here: this module is imported at every Django start (the app's ready()
        # registers the tool), and mcp brings pydantic's schemas, httpx and starlette
        # (1.4 s and ~20 MB of the worker's cold start and idle RSS). The tool
        # only runs inside the MCP server, which has imported mcp already.
        from mcp.server.fastmcp.exceptions import ToolError

        raise ToolError("give at least one file path to attach")
    found: list[str] = []
    missing: list[str] = []
    for path in named[:MAX_PATHS]:
        absolute = os.path.abspath(os.path.expanduser(path))
        # lstat only: nothing is read here (the hook reads and checks the bytes).
        try:
            is_file = os.path.isfile(absolute) and not os.path.islink(absolute)
        except OSError:
            is_file = False
        (found if is_file else missing).append(path)
    lines = []
    if found:
        names = ", ".join(os.path.basename(p) for p in found)
        lines.append(
            f"{len(found)} file(s) will be attached to the current request on My Work: {names}."
        )
    if missing:
        lines.append(f"Not a regular file, so not attached: {', '.join(missing)}.")
    if len(named) > MAX_PATHS:
        lines.append(f"Only the first {MAX_PATHS} paths are attached.")
    if title.strip():
        lines.append(f"Title: {title.strip()[:200]}")
    return "\n".join(lines)
