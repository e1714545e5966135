"""Requests the serving process is answering now, so its background work waits its turn.

The huey consumer's workers and the outline cache's parser are threads of the serving
process (memory/worker/inprocess_consumer.py). Python runs one thread at a time: a
compression batch or a parse that holds the interpreter makes a hook's request wait for
it, up to the switch interval (5 ms) at each of the request's SQLite calls (the
ingest and gate rows, 1–1.5 ms slower with the consumer's threads busy than without them).
So a hook or a search marks itself `foreground()`, and background work calls
`quiet_wait()` between its units: it sleeps while requests are in flight and for QUIET_S
after the last one, but never longer than WAIT_MAX_S, so a steady stream of requests still
lets it through one unit at a time.

A thread that is itself inside a request never waits (HUEY immediate mode runs tasks inside
the request; a waiting request would wait on itself). In a process that serves no request
(a separate consumer, the CLI) nothing is in flight, and `quiet_wait()` returns at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

QUIET_S = 0.02
WAIT_MAX_S = 1.0

# Requests in flight, and when the last one ended (time.monotonic()).
_busy = [0, 0.0]
_lock = threading.Lock()
_local = threading.local()


@contextmanager
def foreground() -> Iterator[None]:
    """Around a request whose caller waits for it (a hook, a search)."""
    with _lock:
        _busy[0] += 1
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        yield
    finally:
        _local.depth -= 1
        with _lock:
            _busy[0] -= 1
            _busy[1] = time.monotonic()


def quiet_wait() -> None:
    """Sleep until no request is in flight and none ended within QUIET_S, or until
    WAIT_MAX_S have passed; at once on a thread that is inside a request itself."""
    if getattr(_local, "depth", 0):
        return
    deadline = time.monotonic() + WAIT_MAX_S
    while True:
        with _lock:
            in_flight, ended = _busy
        now = time.monotonic()
        wait = QUIET_S if in_flight else ended + QUIET_S - now
        if wait <= 0 or now >= deadline:
            return
        time.sleep(min(wait, deadline - now))
