"""Processes by pid and process group, on every OS through psutil: alive or not, which are
cmem's and of this data dir (and this user's), and stopping a whole group (each child of the
supervisor runs in its own group on POSIX).

What is POSIX-only stays here: process groups (`os.getpgid`, `os.killpg`) and reaping our
own zombie children (`os.waitpid`). On Windows a "group" is the process and its live
descendants (psutil's `children(recursive=True)`), and a signal is TerminateProcess. The
platforms each part was tested on are in docs/platforms.md.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory import config

if TYPE_CHECKING:
    import psutil

POSIX = os.name == "posix"
TERM = signal.SIGTERM
# Windows has no SIGKILL: there both end in TerminateProcess (psutil's kill()).
KILL: int = getattr(signal, "SIGKILL", signal.SIGTERM)
# psutil.STATUS_ZOMBIE, STATUS_DEAD. psutil is imported where it is used: the CLI verbs
# that never look at a process (search, show, timeline, stats, logs) do not pay for it.
_GONE = frozenset({"zombie", "dead"})
# `cmem.exe` is the console script's launcher on Windows.
_OUR_PROGRAMS = frozenset({"cmem", "cmem.exe", "manage.py"})


def pid_alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie is dead: ours is reaped here, another's waits for init)."""
    import psutil  # on use: see _GONE

    if pid <= 0 or not psutil.pid_exists(pid):
        return False
    if POSIX:
        # A zombie child of ours still exists for kill(0); reap it if it is ours.
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                return False
        except ChildProcessError:
            pass
    try:
        return psutil.Process(pid).status() not in _GONE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # it exists; someone else's


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) pids of the process group `pgid` (the children run in their own
    group). Windows has no process groups: the process and its live descendants."""
    import psutil  # on use: see _GONE

    if pgid <= 0:
        return []
    if not POSIX:
        try:
            leader = psutil.Process(pgid)
            procs = [leader, *leader.children(recursive=True)]
        except psutil.Error:
            return []
        return [p.pid for p in procs if _status(p) not in _GONE]
    try:
        os.killpg(pgid, 0)  # no member at all: the common answer, without a scan
    except ProcessLookupError:
        return []
    except PermissionError:
        pass
    members = []
    for proc in psutil.process_iter(["status"]):
        try:
            if proc.info["status"] not in _GONE and os.getpgid(proc.pid) == pgid:
                members.append(proc.pid)
        except OSError:  # gone meanwhile, or not ours to ask
            continue
    return members


def _status(proc: psutil.Process) -> str | None:
    import psutil  # on use: see _GONE

    try:
        return str(proc.status())
    except psutil.Error:
        return None


def group_alive(pgid: int) -> bool:
    return bool(group_members(pgid))


def process_cmdline(pid: int) -> list[str] | None:
    """The process's argv, or None when it does not exist or may not be read."""
    import psutil  # on use: see _GONE

    try:
        return list(psutil.Process(pid).cmdline())
    except psutil.Error:
        return None


def looks_like_cmem(cmdline: list[str] | None, *, supervisor: bool = False) -> bool:
    """Whether argv is one of ours: `cmem serve`, gunicorn on cmem_site.wsgi, run_huey."""
    if not cmdline:
        return False
    ours = any("cmem_site" in arg or Path(arg).name in _OUR_PROGRAMS for arg in cmdline)
    return ours and (not supervisor or "serve" in cmdline)


def _same_owner(proc: psutil.Process) -> bool:
    import psutil  # on use: see _GONE

    if POSIX:
        return bool(proc.uids().real == os.getuid())
    return bool(proc.username() == psutil.Process().username())


def belongs_here(pid: int) -> bool:
    """Whether `pid` is a cmem process of this user and this data dir. Children get
    CLAUDE_MEM_DATA_DIR in their environment, so a recycled pid that is another user's or
    another data dir's cmem is never taken for ours. Where the OS will not show the
    user's own process's environment (macOS, for most programs), its working directory
    must be the data dir (`cmem start` runs the supervisor there, and its children inherit
    it); a process that shows neither is not ours."""
    import psutil  # on use: see _GONE

    if not looks_like_cmem(process_cmdline(pid)):
        return False
    here = {str(config.data_dir()), str(config.data_dir().resolve())}
    try:
        proc = psutil.Process(pid)
        if not _same_owner(proc):
            return False
        try:
            return proc.environ().get("CLAUDE_MEM_DATA_DIR") in here
        except psutil.AccessDenied:
            return proc.cwd() in here
    except (psutil.Error, NotImplementedError):
        return False


def wait_until(predicate: Any, timeout: float, interval: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def signal_process(pid: int, sig: int) -> None:
    """Send `sig` (TERM or KILL) to one process; a process already gone is no error (one
    that may not be signalled is: PermissionError)."""
    if pid <= 0:
        return
    if POSIX:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        return
    import psutil  # on use: see _GONE

    try:
        proc = psutil.Process(pid)
        proc.kill() if sig == KILL else proc.terminate()
    except psutil.NoSuchProcess:
        pass
    except psutil.AccessDenied as exc:
        raise PermissionError(str(exc)) from exc


def signal_group(pgid: int, sig: int) -> None:
    """Send `sig` (TERM or KILL) to every process of the group `pgid` (on Windows: the
    process and its descendants)."""
    if pgid <= 0:
        return
    if POSIX:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
        return
    import psutil  # on use: see _GONE

    try:
        leader = psutil.Process(pgid)
        procs = [*leader.children(recursive=True), leader]
    except psutil.Error:
        return
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.kill() if sig == KILL else proc.terminate()
