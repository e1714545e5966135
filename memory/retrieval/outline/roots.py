"""Which files the code tools may read: only under known project roots.

smart_outline / smart_unfold / smart_search read source files for the agent, over HTTP
(the local worker) and MCP alike. They read only files under a known project root (the
roots cmem recorded for its sessions, plus the MCP server's own working directory), never
cmem's data dir nor a secret location (memory.privacy.secret_locations), never through `..`
or an absolute path elsewhere. The check runs on the resolved path, so a symlink that points
out of a root is refused like the path it points to.

This module imports no Django (the MCP server is Django-free); `recorded_roots` imports the
models when called, in the worker only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from memory import config
from memory.privacy.secret_locations import refusal_reason


def _usable(root: str) -> Path | None:
    """A root as a resolved folder; the filesystem root is never a project root."""
    if not root or "\0" in root:
        return None
    path = Path(root).expanduser()
    if not path.is_absolute():
        return None
    resolved = path.resolve()
    return None if resolved == Path(resolved.anchor) else resolved


def code_path(path: str, *, roots: Iterable[str], base: str = "") -> Path:
    """`path` resolved (relative to `base` when relative), or PermissionError/ValueError.

    Refused: empty or NUL-bearing paths, relative paths without a base, anything whose
    resolved path is not inside one of `roots`, cmem's data dir, and secret locations.
    """
    if not path.strip() or "\0" in path:
        raise ValueError("path is empty or not a valid path")
    candidate = Path(path).expanduser()
    if not candidate.is_absolute():
        if not base:
            raise ValueError(
                f"{path} is relative: give an absolute path, or a root to resolve it against"
            )
        candidate = Path(base).expanduser() / candidate
    candidate = candidate.resolve()
    data = config.data_dir().expanduser().resolve()
    if candidate.is_relative_to(data):
        raise PermissionError("cmem's data directory is not served")
    if refusal_reason(str(candidate)):
        raise PermissionError(f"{path} is a secret location: not served")
    allowed = [r for r in (_usable(root) for root in roots) if r is not None]
    if not any(candidate.is_relative_to(r) and not r.is_relative_to(data) for r in allowed):
        raise PermissionError(
            f"{path} is outside every known project root (the code tools read only files of "
            "projects cmem has recorded, or of the MCP server's working directory)"
        )
    return candidate


def recorded_roots() -> list[str]:
    """The project roots of recorded sessions (worker side: reads the database)."""
    # worker side only: the MCP server imports this room without Django
    from memory.models import Session

    rows = Session.objects.exclude(project_root="").values_list("project_root", flat=True)
    return sorted(set(rows))


def mcp_roots(recorded: Iterable[str]) -> list[str]:
    """The MCP server's roots: its own working directory plus the recorded ones."""
    return [os.getcwd(), *recorded]
