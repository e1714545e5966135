"""Where secrets live: the one list that deliverables and the redactor both refuse.

A file under one of these locations is never copied as a deliverable, and text read from
one (a tool use's output) is never stored: redaction of such text is refusal, because a
credentials file is nothing but secrets in formats no pattern knows. The list is matched on
the path as given and on its resolved real path, so a symlinked spelling does not slip by,
and anywhere in a path, so another account's home (/root/.ssh) is refused like $HOME's.
"""

from __future__ import annotations

import contextlib
import os

from memory import config

# Relative to $HOME. A folder entry covers everything under it.
HOME_SECRET_ENTRIES: tuple[str, ...] = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".kube",
    ".docker",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".claude.json",
    ".claude/.credentials.json",
    ".codex/auth.json",
)
# Kernel and device trees: /proc/self/environ holds the worker's API key.
SYSTEM_ROOTS: tuple[str, ...] = ("/proc", "/sys", "/dev")


# The entries as segment tuples: matched anywhere in a path, so another home's `.ssh`
# (/root/.ssh, /home/bob/.ssh) or a copy of a credentials layout is refused as well.
_ENTRY_SEGMENTS: tuple[tuple[str, ...], ...] = tuple(
    tuple(e.split("/")) for e in HOME_SECRET_ENTRIES
)


def _has_entry(path: str) -> str:
    parts = tuple(p for p in path.split(os.sep) if p)
    for entry in _ENTRY_SEGMENTS:
        n = len(entry)
        for i in range(len(parts) - n + 1):
            if parts[i : i + n] == entry:
                return "/".join(entry)
    return ""


def _inside(path: str, root: str) -> bool:
    root = os.path.normpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def refusal_reason(path: str) -> str:
    """Why `path` is a secret location ('' when it is not): a system tree, cmem's data dir,
    or one of HOME_SECRET_ENTRIES. Checked on the normalised path and on its real path."""
    if not path:
        return ""
    spelled = os.path.normpath(os.path.expanduser(path))
    candidates = {spelled}
    with contextlib.suppress(OSError, ValueError):
        candidates.add(os.path.realpath(spelled))
    data = os.path.normpath(os.path.expanduser(str(config.data_dir())))
    datas = {data, os.path.realpath(data)}
    for candidate in candidates:
        for root in SYSTEM_ROOTS:
            if _inside(candidate, root):
                return f"system path {root}"
        for d in datas:
            if _inside(candidate, d):
                return "cmem's data dir"
        entry = _has_entry(candidate)
        if entry:
            return f"secret location {entry}"
    return ""


def is_secret_location(path: str) -> bool:
    return bool(refusal_reason(path))
