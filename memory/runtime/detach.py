"""Starting a process that outlives the one that started it, or that dies with it.

- `detached()`: the keyword arguments for subprocess.Popen that put the child in a session
  (POSIX) or a process group without a console (Windows) of its own, so no Ctrl-C, SIGHUP
  or console close aimed at the starter reaches it, and a whole group can be stopped.
- `die_with_parent()`: Linux only (prctl(PR_SET_PDEATHSIG)): the child gets SIGTERM when its
  parent dies, even by kill -9. No portable form exists; elsewhere it is None (nothing
  runs) and the supervisor's own stop is what takes its children down. docs/platforms.md
  says what that means on macOS and Windows.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from typing import Any

LINUX = sys.platform.startswith("linux")
_PR_SET_PDEATHSIG = 1


def detached() -> dict[str, Any]:
    if os.name == "nt":
        flags = getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0) | getattr(
            subprocess, "DETACHED_PROCESS", 0
        )
        return {"creationflags": flags}
    return {"start_new_session": True}


def die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn for subprocess.Popen that asks for SIGTERM when the parent dies, or None
    where that has no form (Popen then runs nothing in the child)."""
    if not LINUX:
        return None
    import ctypes  # here, in the parent: the fast CLI path never needs it

    def pdeathsig_term() -> None:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)

    return pdeathsig_term
