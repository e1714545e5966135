"""The spool's file names, `<ns>.<pid>.<n>.<platform>.<event>.hook`, in one place.

Written by the hook client (memory/hookclient/client.py), read by the worker (memory.hooks.spool)
and by the team-mode client's drain (memory/hookclient/remote.py). The name carries what
the body does not (platform and event) and sorts by time, then pid, then a per-process
counter, so events are ingested in the order they happened. Stdlib only and no imports at
all: the hook client loads it on its spool path, with the worker down.
"""

from __future__ import annotations

SUFFIX = ".hook"


def spool_name(platform: str, event: str, *, ns: int, pid: int, n: int) -> str:
    return f"{ns:020d}.{pid:08d}.{n:04d}.{platform}.{event}{SUFFIX}"


def temp_name(name: str) -> str:
    """Where `name` is written before its atomic rename; the leading dot hides it."""
    return f".{name}.tmp"


def is_pending(name: str) -> bool:
    """A finished spool file (temp files start with a dot and end otherwise)."""
    return name.endswith(SUFFIX) and not name.startswith(".")


def parse_name(name: str) -> tuple[str, str] | None:
    """(platform, event) of a spool file name, or None when it is not one."""
    if not name.endswith(SUFFIX):
        return None
    parts = name[: -len(SUFFIX)].split(".")
    if len(parts) != 5:
        return None
    return parts[3], parts[4]
