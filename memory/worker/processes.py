"""Processes by pid and process group: alive or not, which are cmem's and of this data dir,
and signalling a whole group (each child runs in its own group)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from memory import config


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours still answers kill(0); reap it if it is ours.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return False
    except ChildProcessError:
        pass
    # Someone else's zombie (not yet reaped by init) is dead all the same.
    return _proc_state(pid) not in {"Z", "X", None}


def _proc_state(pid: int) -> str | None:
    """The one-letter state from /proc (`?` where there is no /proc, None if gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return "?" if not Path("/proc/self").exists() else None
    except OSError:
        return "?"
    return stat.rsplit(")", 1)[1].split()[0]


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) pids of a process group; children run in their own group."""
    proc = Path("/proc")
    if not (proc / "self").exists():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return []
        except PermissionError:
            pass
        return [pgid]
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # fields: state, ppid, pgrp, ...
        if fields[0] not in {"Z", "X"} and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def group_alive(pgid: int) -> bool:
    return bool(group_members(pgid))


def process_cmdline(pid: int) -> list[str] | None:
    """The process's argv, or None when it does not exist (Linux /proc, else `ps`)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        return [part.decode(errors="replace") for part in raw.split(b"\0") if part]
    except FileNotFoundError:
        if Path("/proc/self").exists():
            return None
    except OSError:
        return None
    try:
        out = subprocess.run(
            ["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.split() or None


def looks_like_cmem(cmdline: list[str] | None, *, supervisor: bool = False) -> bool:
    """Whether argv is one of ours: `cmem serve`, gunicorn on cmem_site.wsgi, run_huey."""
    if not cmdline:
        return False
    ours = any("cmem_site" in arg or Path(arg).name in {"cmem", "manage.py"} for arg in cmdline)
    return ours and (not supervisor or "serve" in cmdline)


def belongs_here(pid: int) -> bool:
    """Whether `pid` is a cmem process of this data dir. Children get CLAUDE_MEM_DATA_DIR in
    their environment, so a recycled pid that is another user's or another data dir's
    cmem is never taken for ours (where /proc is missing, the command line has to do)."""
    if not looks_like_cmem(process_cmdline(pid)):
        return False
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except FileNotFoundError:
        return not Path("/proc/self").exists()
    except OSError:
        return False
    here = {str(config.data_dir()), str(config.data_dir().resolve())}
    return any(f"CLAUDE_MEM_DATA_DIR={path}".encode() in environ for path in here)


def wait_until(predicate: Any, timeout: float, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
