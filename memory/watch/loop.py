"""`cmem watch`: one pass (`--once`) or the loop the worker's supervisor runs
(CLAUDE_MEM_WATCH names the agents), over memory/watch/follower.py."""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import TextIO

from memory.hookclient import client as hookclient
from memory.hookclient import setting
from memory.watch.follower import (
    AGENTS,
    SETTLE_S,
    PassReport,
    WatchError,
    WorkerUnavailable,
    follow_pass,
    source_for,
    watch_lock,
)

INTERVAL_S = 2.0
# `--once` starts the worker when it is down and waits this long for it.
START_WAIT_S = 30.0


def watched_agents() -> list[str]:
    """The agents CLAUDE_MEM_WATCH names (set by `cmem install --continue`)."""
    raw = setting("CLAUDE_MEM_WATCH")
    return [a.strip() for a in raw.split(",") if a.strip() in AGENTS]


def _pass_until_done(agent: str, *, settle_s: float, err: TextIO) -> PassReport:
    total = PassReport()
    while True:
        report = follow_pass(source_for(agent), settle_s=settle_s)
        total.events += report.events
        total.items += report.items
        total.files += report.files
        total.refused += report.refused
        for line in report.messages:
            err.write(f"cmem watch: {line}\n")
        if not report.more:
            return total


def _worker_started(err: TextIO) -> bool:
    """Start the local worker (as a hook would) and wait until it takes events."""
    if setting("CLAUDE_MEM_WORKER_URL").strip() or os.environ.get("CMEM_NO_SPAWN") == "1":
        return False  # team mode's worker is not ours to start; CMEM_NO_SPAWN: never start one
    hookclient.spawn_worker()  # or another client is starting it: wait all the same
    deadline = time.monotonic() + START_WAIT_S
    err.write("cmem watch: the worker is not running; starting it\n")
    while time.monotonic() < deadline:
        try:
            status, _ = hookclient.post_local("/api/health", b"", 2.0)
            if status in (200, 405):
                return True
        except hookclient.HookFailure:
            pass
        time.sleep(0.25)
    return False


def once(agents: list[str], *, out: TextIO, err: TextIO, settle_s: float = 0.0) -> int:
    """Deliver everything new now; 0 when all of it was taken, 1 otherwise."""
    code = 0
    for agent in agents:
        source = source_for(agent)
        try:
            with watch_lock(agent, wait_s=30.0):
                try:
                    report = _pass_until_done(agent, settle_s=settle_s, err=err)
                except WorkerUnavailable:
                    if not _worker_started(err):
                        raise
                    report = _pass_until_done(agent, settle_s=settle_s, err=err)
        except WorkerUnavailable as exc:
            err.write(f"cmem watch: {agent}: the worker takes no events ({exc}); nothing was"
                      " marked as read, run it again once the worker runs\n")  # fmt: skip
            code = 1
            continue
        except WatchError as exc:
            err.write(f"cmem watch: {agent}: {exc}\n")
            code = 1
            continue
        refused = f", {report.refused} refused" if report.refused else ""
        out.write(
            f"{agent}: {report.events} events from {report.items} new items in "
            f"{report.files} session files ({source.folder}){refused}\n"
        )
    return code


def forever(fixed: list[str] | None, *, err: TextIO, interval_s: float = INTERVAL_S) -> int:
    """Follow until SIGTERM/SIGINT; a worker that is down is waited for, never crashed on.
    `fixed` None (the worker's watcher): CLAUDE_MEM_WATCH is read again before every pass,
    so `cmem uninstall --continue` stops the following without a restart. The lock is held
    for a pass only: a `cmem watch --once` meanwhile waits for the pass, then goes on."""
    stopping: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(True))
    err.write(f"cmem watch: following {', '.join(fixed or watched_agents()) or 'nothing yet'}"
              f" every {interval_s:g} s\n")  # fmt: skip
    err.flush()
    while not stopping:
        if fixed is None:
            hookclient.forget_settings()
        for agent in fixed or watched_agents():
            try:
                with watch_lock(agent, wait_s=0.0):
                    _pass_until_done(agent, settle_s=SETTLE_S, err=err)
            except WorkerUnavailable:
                pass  # the state is kept; the next pass tries again
            except WatchError as exc:
                if "another" not in str(exc):  # busy: a `--once` has it; next pass then
                    err.write(f"cmem watch: {agent}: {exc}\n")
        err.flush()
        deadline = time.monotonic() + interval_s
        while not stopping and time.monotonic() < deadline:
            time.sleep(0.1)
    return 0


def main(options: dict[str, object]) -> int:
    """`cmem watch [--agent NAME] [--once] [--interval S]`."""
    agent = options.get("agent")
    # Named, else the ones CLAUDE_MEM_WATCH names, else every agent cmem can follow.
    agents = [str(agent)] if agent else (watched_agents() or list(AGENTS))
    if options.get("once"):
        return once(agents, out=sys.stdout, err=sys.stderr)
    if not agent and watched_agents():
        return forever(None, err=sys.stderr, interval_s=_interval(options))
    return forever(agents, err=sys.stderr, interval_s=_interval(options))


def _interval(options: dict[str, object]) -> float:
    interval = options.get("interval")
    return float(interval) if isinstance(interval, int | float) and interval > 0 else INTERVAL_S
