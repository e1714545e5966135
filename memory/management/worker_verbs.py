"""The verbs that drive the worker from outside (`start`, `stop`, `restart`, `open`, `logs`),
Django-free.

None of them reads the database: they read the data dir's state files and signal processes
(memory/worker/lifecycle.py). So the fast path (cmem_site/quick.py) runs them without
starting Django (that setup was most of what `cmem start` cost on a running worker), and
their management commands call the same functions. Each writes through `out` and raises
VerbError (one line, exit 1) for what it cannot do.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory.management.verb_text import is_heartbeat, tail_lines
from memory.runtime.credentials import owner_login_url
from memory.worker import lifecycle
from memory.worker import state as worker

Write = Callable[[str], None]


class VerbError(Exception):
    """What a verb could not do, said in one line."""


def start(options: dict[str, Any], out: Write) -> None:
    try:
        result = lifecycle.worker_start(timeout=options["timeout"])
    except worker.WorkerError as exc:
        raise VerbError(str(exc)) from None
    for note in result.notes:
        out(f"cmem: {note}")
    state = result.state
    version = (state.health or {}).get("version", "?")
    # The URL logs this browser in once (memory/access/owner_auth.py); `cmem open` makes another.
    login = owner_login_url(state.address.url)
    if result.already_running:
        out(f"cmem {version} is already running: {login} (pid {state.pid})")
    else:
        out(f"cmem {version} started: {login} (pid {state.pid})")
        out(f"logs: {worker.log_dir()}  (cmem logs -f)")


def stop(options: dict[str, Any], out: Write) -> None:
    try:
        result = lifecycle.worker_stop(timeout=options["timeout"])
    except worker.WorkerError as exc:
        raise VerbError(str(exc)) from None
    for note in result.notes:
        out(f"cmem: {note}")
    if result.was_running:
        out(f"cmem stopped (pid {result.pid}).")
    else:
        out("cmem is not running.")


def restart(options: dict[str, Any], out: Write) -> None:
    try:
        stopped = lifecycle.worker_stop()
        result = lifecycle.worker_start(timeout=options["timeout"])
    except worker.WorkerError as exc:
        raise VerbError(str(exc)) from None
    for note in stopped.notes + result.notes:
        out(f"cmem: {note}")
    state = result.state
    version = (state.health or {}).get("version", "?")
    verb = "restarted" if stopped.was_running else "started"
    out(f"cmem {version} {verb}: {state.address.url}/ (pid {state.pid})")


def open_(options: dict[str, Any], out: Write) -> None:
    # only `cmem open` starts a browser: webbrowser reads the environment's browsers on import
    import webbrowser

    try:
        state = lifecycle.worker_start().state
    except worker.WorkerError as exc:
        raise VerbError(str(exc)) from None
    path = options["path"] if str(options["path"]).startswith("/") else "/"
    url = owner_login_url(state.address.url, path)
    out(url)
    if not options["print"]:
        webbrowser.open(url)


def logs(options: dict[str, Any], out: Write, flush: Callable[[], None] = lambda: None) -> None:
    files = lifecycle.log_files()
    heartbeat = bool(options.get("all"))
    if not files:
        out(f"no logs yet in {worker.log_dir()}")
        if not options["follow"]:
            return
    for path in files:
        out(f"==> {path} <==")
        for line in tail_lines(path, options["lines"], heartbeat=heartbeat):
            out(line)
    if options["follow"]:
        with contextlib.suppress(KeyboardInterrupt):
            logs_follow(out, flush, heartbeat=heartbeat)


def logs_follow(
    out: Write,
    flush: Callable[[], None],
    *,
    heartbeat: bool = False,
    poll: float = 0.5,
    stop_after: float | None = None,
) -> None:
    """Print lines appended to any log (new files and rotations included) until interrupted."""
    # (inode, offset) per file: a new inode under the same name is a rotation.
    seen: dict[Path, tuple[int, int]] = {}
    for path in lifecycle.log_files():
        st = path.stat()
        seen[path] = (st.st_ino, st.st_size)
    last: Path | None = None
    started = time.monotonic()
    while stop_after is None or time.monotonic() - started < stop_after:
        for path in lifecycle.log_files():
            try:
                st = path.stat()
            except FileNotFoundError:
                continue
            inode, offset = seen.get(path, (st.st_ino, 0))
            if inode != st.st_ino or st.st_size < offset:  # rotated or truncated
                offset = 0
            seen[path] = (st.st_ino, st.st_size)
            if st.st_size == offset:
                continue
            with open(path, "rb") as fh:
                fh.seek(offset)
                chunk = fh.read(st.st_size - offset)
            lines = chunk.decode(errors="replace").rstrip("\n").split("\n")
            kept = lines if heartbeat else [line for line in lines if not is_heartbeat(line)]
            if not kept:
                continue
            if path != last:
                out(f"==> {path} <==")
                last = path
            out("\n".join(kept))
        flush()
        time.sleep(poll)
