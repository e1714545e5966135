"""Serving HTTP through granian's Rust worker, inside the one serving process.

`python -m tests.bench lean` measured the HTTP floor (GET /api/health, keep-alive, same Django app):
waitress spends ~0.3-0.5 ms per request in its asyncore loop and the hand-off to a task
thread, granian's worker ~0.15 ms (docs/history/lean-worker.md, server choice). Granian's own
front ends do not fit the one-process shape: its CLI and `MPServer` fork a worker process
per bind (a second Python process and ~35 MB), and its embedded asyncio server refuses WSGI.
So this module drives the worker class those front ends drive (`granian._granian.WSGIWorker`,
the same calls as `granian/server/mp.py`), once per listener, in this process:
- one worker on the TCP port, one on the owner's Unix socket (0600 in the 0700 data dir);
  each calls its own WSGI app, so the owner mark still comes from the listener;
- Python threads are granian's blocking threads (SERVER_THREADS per listener), with this
  process's SQLite connections per thread as under waitress.

That worker API is granian's internals, so `pyproject.toml` pins granian to one minor
series and `start_listeners` raises `GranianUnavailable` on anything it does not expect;
server.py then serves with waitress, as before, and logs why.

The WSGI environ is built here, not by granian's wrapper: that one copies the whole of
`os.environ` into every request (API keys included), and nothing in a request should hold
the process's environment.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

WsgiApp = Callable[..., Iterable[bytes]]
# An app and where it listens: (host, port) for TCP, a path for a Unix socket.
Listener = tuple[WsgiApp, tuple[str, int] | Path]

BACKLOG = 128
# Requests in flight per listener before granian answers 503 (waitress: connection_limit).
BACKPRESSURE = 200
# A client that sends no complete header within this many ms is dropped (waitress:
# channel_timeout), so an idle or stalled connection cannot hold a slot for ever.
HEADER_READ_TIMEOUT_MS = 30_000
# Granian's idle Python threads exit after this many seconds and are re-made on demand; each
# holds its own SQLite connection, which a new thread opens again (PRAGMAs and all) on its
# first request, so they stay as long as granian allows: hooks come in bursts minutes apart.
THREAD_IDLE_TIMEOUT_S = 600

_BASE_ENVIRON: dict[str, Any] = {
    "GATEWAY_INTERFACE": "CGI/1.1",
    "SCRIPT_NAME": "",
    "SERVER_SOFTWARE": "cmem",
    "wsgi.errors": sys.stderr,
    "wsgi.input_terminated": True,
    "wsgi.multiprocess": False,
    "wsgi.multithread": True,
    "wsgi.run_once": False,
    "wsgi.version": (1, 0),
}


class GranianUnavailable(RuntimeError):
    """granian is missing, or its worker API is not the one this module was written for."""


class _StartResponse:
    __slots__ = ("status", "headers")

    def __init__(self) -> None:
        self.status = 200
        self.headers: list[tuple[str, str]] = []

    def __call__(self, status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        self.status = int(status.split(" ", 1)[0])
        self.headers = headers


class _Body:
    """A streaming response for granian's iterator protocol: `__next__` and `close`."""

    __slots__ = ("inner", "__next__")

    def __init__(self, inner: Iterable[bytes]) -> None:
        self.inner = inner
        self.__next__: Callable[[], bytes] = iter(inner).__next__

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()


class InFlight:
    """Requests inside the app right now, so a stop can let them finish (waitress's
    dispatcher.shutdown did this; granian's worker signal only stops the accepting)."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    def enter(self) -> None:
        with self._lock:
            self._count += 1

    def leave(self) -> None:
        with self._lock:
            self._count -= 1

    def drain(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self._count > 0:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True


def wsgi_runner(app: WsgiApp, in_flight: InFlight) -> Callable[[Any, dict[str, Any]], int]:
    """granian's callback for `app`: build the environ, call the app, hand the answer back.

    A Django response that is not streaming goes back as one bytes object (one call into
    the Rust side instead of one per chunk); a streaming one (the live feed) as an iterator."""

    def run(proto: Any, scope: dict[str, Any]) -> int:
        in_flight.enter()
        try:
            return _respond(app, proto, scope)
        finally:
            in_flight.leave()

    return run


def _respond(app: WsgiApp, proto: Any, scope: dict[str, Any]) -> int:
    start_response = _StartResponse()
    result = app(_BASE_ENVIRON | scope, start_response)
    if isinstance(result, list):
        proto.response_bytes(start_response.status, start_response.headers, b"".join(result))
    elif getattr(result, "streaming", True) is False:
        try:
            body = result.content  # type: ignore[attr-defined]
        finally:
            result.close()  # type: ignore[attr-defined]
        proto.response_bytes(start_response.status, start_response.headers, body)
    else:
        proto.response_iter(start_response.status, start_response.headers, _Body(result))
    return start_response.status


@dataclass
class Listeners:
    """The running workers; `stop()` stops accepting and lets requests in flight finish."""

    signals: list[Any] = field(default_factory=list)
    in_flight: InFlight = field(default_factory=InFlight)

    def stop(self, timeout: float = 5.0) -> None:
        for signal in self.signals:
            signal.set()
        if not self.in_flight.drain(timeout):
            log.warning("stopping with requests still running after %.0f s", timeout)


def start_listeners(apps: Iterable[Listener], threads: int) -> Listeners:
    """Start one granian worker per (app, address): a (host, port) pair or a Unix socket
    path. Returns once every listener is bound and serving on granian's own threads."""
    try:
        # granian's private worker API: a missing piece means GranianUnavailable, not a crash
        from granian._futures import _new_cbscheduler
        from granian._loops import loops
        from granian.constants import HTTPModes
        from granian.http import HTTP1Settings
        from granian.net import SocketSpec, UnixSocketSpec

        # Untyped on purpose: granian's stub (_granian.pyi) lags the worker's real signature,
        # the one granian/server/mp.py calls and this module follows.
        native: Any = importlib.import_module("granian._granian")
    except ImportError as exc:  # not installed, or a release that moved its internals
        raise GranianUnavailable(f"granian's worker API is not importable: {exc}") from exc
    listeners = Listeners()
    http1 = HTTP1Settings(header_read_timeout=HEADER_READ_TIMEOUT_MS, keep_alive=True)
    no_tls: tuple[Any, ...] = (False, None, None, None, "tls1.3", None, [], False)
    try:
        for worker_id, (app, address) in enumerate(apps, start=1):
            spec: tuple[Any, Any]  # (a TCP spec to bind, or a bound Unix socket holder)
            if isinstance(address, Path):
                address.unlink(missing_ok=True)
                spec = (None, UnixSocketSpec(str(address), BACKLOG, 0o600).build())
            else:
                tcp = SocketSpec(address[0], address[1], BACKLOG)
                tcp.build()  # binds now, so a taken port fails here, not in a Rust thread
                spec = (tcp, None)
            worker = native.WSGIWorker(
                worker_id, spec, None,
                1, 1,  # Rust side: one runtime thread, one blocking thread (unused by WSGI)
                threads, THREAD_IDLE_TIMEOUT_S, BACKPRESSURE,
                HTTPModes.http1, http1, None, None,  # HTTP/1.1 only, no static files
                *no_tls,
                (None, None),  # no metrics
            )  # fmt: skip
            signal = native.WorkerSignal()
            loop = loops.get("asyncio")
            serve = worker.serve_str_uds if isinstance(address, Path) else worker.serve_str
            runner = wsgi_runner(app, listeners.in_flight)
            serve(_new_cbscheduler(loop, runner, impl_asyncio=False), loop, signal)
            listeners.signals.append(signal)
    except TypeError as exc:  # a granian release whose worker takes other arguments
        listeners.stop(timeout=0)
        raise GranianUnavailable(f"granian's worker API changed: {exc}") from exc
    return listeners
