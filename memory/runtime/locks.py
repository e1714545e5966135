"""File locks that the operating system drops when their holder dies, kill -9 included, so a
crashed process never leaves one stuck. Through filelock's descriptor API on a file cmem
opens itself: flock(2) on Linux and macOS (the lock belongs to the open file, so two opens
in one process contend too), LockFileEx on byte 0 on Windows (released by the OS when the
process ends). The lock file keeps its content and is never removed.

- `hold(path)`: take it without waiting and keep the handle open for the holder's whole
  life (the supervisor's worker.lock: memory/worker/state.py).
- `held_elsewhere(path)`: whether another open holds it (`cmem status` reading worker.lock).
- `exclusive(path)`: hold it for a `with` block, waiting (or not) for it.
- `lock`, `try_lock`, `unlock`: the same on a handle or descriptor the caller keeps.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Protocol

# Between two tries of a waiting lock: the wait is a poll on every OS (flock's own blocking
# wait has no Windows form); these locks are held for milliseconds to seconds.
POLL_S = 0.01


class _HasFileno(Protocol):
    def fileno(self) -> int: ...


Lockable = int | _HasFileno


def _fd(handle: Lockable) -> int:
    return handle if isinstance(handle, int) else handle.fileno()


def try_lock(handle: Lockable) -> bool:
    """Take the exclusive lock without waiting; False when another open holds it."""
    from filelock import lock_descriptor  # here: CLI verbs that take no lock do not pay for it

    return lock_descriptor(_fd(handle), blocking=False)


def lock(handle: Lockable, *, timeout: float | None = None) -> bool:
    """Wait for the exclusive lock, for ever or `timeout` seconds (then False)."""
    if timeout is None:
        from filelock import lock_descriptor  # on use, as in try_lock

        return lock_descriptor(_fd(handle), blocking=True, poll_interval=POLL_S)
    deadline = time.monotonic() + timeout
    while not try_lock(handle):
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)
    return True


def unlock(handle: Lockable) -> None:
    from filelock import unlock_descriptor  # on use, as in try_lock

    unlock_descriptor(_fd(handle))


def hold(path: Path) -> IO[bytes] | None:
    """The open, locked `path` for the caller to keep (closing it, or the process ending,
    releases the lock), or None when another open holds it."""
    fh = open(path, "a+b")  # noqa: SIM115 - the caller keeps it open
    try:
        if try_lock(fh):
            return fh
    except BaseException:
        fh.close()
        raise
    fh.close()
    return None


def held_elsewhere(path: Path) -> bool:
    """Whether another open (another process, while it lives) holds the lock on `path`."""
    if not path.exists():
        return False
    with open(path, "a+b") as fh:
        if not try_lock(fh):
            return True
        unlock(fh)
    return False


@contextlib.contextmanager
def exclusive(
    path: Path, *, wait: bool = True, timeout: float | None = None, mode: str = "a"
) -> Iterator[Any]:
    """Hold the lock on `path` for the block and yield the open handle, or None when
    `wait` is False (or `timeout` passed) and another open holds it."""
    with open(path, mode) as handle:
        got = lock(handle, timeout=timeout) if wait else try_lock(handle)
        if not got:
            yield None
            return
        try:
            yield handle
        finally:
            unlock(handle)
