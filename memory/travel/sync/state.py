"""The sync folder (<data dir>/sync, mode 0700): the clone, the lock and the state file.

The state is written only once a push has succeeded, atomically (write, fsync, rename): a
sync killed at any point leaves the previous state, so the next one re-reads the same
remote changes (imports are idempotent by global id) and re-exports the same local ones
(the same bytes, so git sees nothing new).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path

from memory import config
from memory.runtime import locks

STATE_NAME = "state.json"


class SyncError(RuntimeError):
    """A sync that could not be done; nothing was pushed and the state is unchanged."""


class SyncBusy(RuntimeError):
    """Another sync holds the lock."""


@dataclass(frozen=True)
class SyncState:
    remote: str = ""
    # The remote commit this machine last imported and built on ("" before the first sync).
    commit: str = ""
    # This machine's changes after this time (ISO-8601 UTC) are still to be exported.
    watermark: str = ""
    last_sync: str = ""  # when the last sync finished (the schedule reads it)

    def watermark_time(self) -> datetime | None:
        return datetime.fromisoformat(self.watermark) if self.watermark else None

    def moved(self, **changes: str) -> SyncState:
        return replace(self, **changes)


def remote_configured() -> str:
    """The remote `cmem sync --remote` remembered (or the setting), empty when none."""
    return config.get("CLAUDE_MEM_SYNC_REMOTE").strip()


def sync_dir() -> Path:
    path = config.data_dir() / "sync"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def repo_dir() -> Path:
    return sync_dir() / "repo"


def state_load() -> SyncState:
    path = sync_dir() / STATE_NAME
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return SyncState()
    known = SyncState.__dataclass_fields__
    return SyncState(**{k: str(v) for k, v in data.items() if k in known})


def state_save(state: SyncState) -> None:
    body = json.dumps(asdict(state), indent=2) + "\n"
    config.write_atomic(sync_dir() / STATE_NAME, body.encode())


@contextlib.contextmanager
def sync_lock(*, wait_s: float) -> Iterator[None]:
    """Hold the sync lock (memory/runtime/locks.py: the OS drops it when a killed sync's
    process ends, so a kill -9 never leaves it stuck); SyncBusy after `wait_s` seconds."""
    path = sync_dir() / "lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if not locks.lock(fd, timeout=wait_s):
            raise SyncBusy("another `cmem sync` is running")
        yield
    finally:
        os.close(fd)  # closing releases the lock
