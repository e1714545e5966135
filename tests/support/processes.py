"""What a test run left running. tests/testenv.py marks the run's environment with
PYTEST_CMEM_RUN, which every process a test starts inherits (make_worker_env keeps it); a
process started with an environment of its own is known by its data dir under the run's
temporary folders. Tests stop what they start: this only finds what one did not."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

RUN_MARK = "PYTEST_CMEM_RUN"


@dataclass(frozen=True)
class Leftover:
    pid: int
    argv: str
    started_by: str  # PYTEST_CURRENT_TEST when it was started, else its data dir

    def __str__(self) -> str:
        return f"pid {self.pid}: {self.argv} (started by {self.started_by})"


def leftover_processes(roots: list[str]) -> list[Leftover]:
    """Live processes of this run: they carry its mark, or their data dir is under `roots`."""
    mark = f"{RUN_MARK}={os.environ[RUN_MARK]}".encode()
    prefixes = [root.rstrip("/").encode() + b"/" for root in roots]
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        pid = int(proc.name)
        if pid == os.getpid():
            continue
        try:
            env = (proc / "environ").read_bytes().split(b"\0")
            argv = (proc / "cmdline").read_bytes().replace(b"\0", b" ").strip()
        except OSError:  # gone, or not ours to read
            continue
        data = next((v[20:] for v in env if v.startswith(b"CLAUDE_MEM_DATA_DIR=")), b"")
        if mark not in env and not any((data + b"/").startswith(p) for p in prefixes):
            continue
        test = next((v[20:] for v in env if v.startswith(b"PYTEST_CURRENT_TEST=")), b"")
        found.append(
            Leftover(pid, argv.decode(errors="replace"), (test or data).decode(errors="replace"))
        )
    return found


def wait_for_leftovers(roots: list[str], grace: float = 5.0) -> list[Leftover]:
    """What is still running after `grace` seconds (a worker told to stop may be finishing)."""
    deadline = time.monotonic() + grace
    while (left := leftover_processes(roots)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left
