"""The worker's one serving process: the web app and hook API, and the huey consumer.

Issue 19 measured the old tree (gunicorn master + gunicorn worker + a consumer process, each
a Python with Django) at 4 processes and 228 MB. Here one process does all of it:
- granian's Rust worker serves the WSGI app on TCP and on the owner's Unix socket, one
  worker per listener, both in this process (memory/worker/granian_serving.py); waitress,
  which served before, remains the fallback (CMEM_SERVER=waitress, or granian missing);
- the huey consumer's scheduler and workers are threads of the same process
  (memory/worker/inprocess_consumer.py).
The supervisor (memory/worker/supervisor.py) restarts this process if it dies.

Why granian: measured on this machine with a trivial WSGI app (keep-alive GET, one core),
granian's worker answers in 0.14 ms, waitress in 0.25-0.47, cheroot 0.34, gunicorn gthread
0.59 (docs/history/lean-worker.md, server choice); waitress needs no master process and serves
both sockets from one loop, so it stays as the pure-Python fallback.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import signal
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from memory import config
from memory.runtime.credentials import socket_path
from memory.worker.state import worker_address

if TYPE_CHECKING:
    from memory.worker.granian_serving import Listener

log = logging.getLogger(__name__)

# waitress's task threads: hooks, the dashboard's polling and the MCP server share them.
# Each keeps its own SQLite connection and page cache (cmem_site/settings.py); a hook's
# request takes a few ms, so 4 serve one user's parallel tool calls without a queue.
SERVER_THREADS = 4
# Seconds a thread runs before the interpreter hands over to another that waits (Python's
# default is 0.005): a request wanting the interpreter back from a busy consumer or parser
# thread, after each of its SQLite calls, waits at most this (memory/runtime/foreground.py).
SWITCH_INTERVAL_S = 0.0005
# memory.runtime.credentials.OWNER_SOCKET_ENVIRON, spelled here to stay import-light.
OWNER_SOCKET_ENVIRON = "cmem.owner_socket"


class _Stop(Exception):
    """Raised in the main thread by SIGTERM/SIGINT/SIGHUP to leave waitress's loop."""


def owner_socket_app(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """The app as served on the Unix socket: only the owner can connect there, so its
    requests carry the mark (memory/access/owner_auth.py). The mark comes from which listener
    accepted the connection, never from anything the client sends."""

    def marked(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        environ[OWNER_SOCKET_ENVIRON] = True
        return app(environ, start_response)

    return marked


def tcp_app(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    def unmarked(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        environ.pop(OWNER_SOCKET_ENVIRON, None)
        return app(environ, start_response)

    return unmarked


def served_apps(
    django_app: Callable[..., Iterable[bytes]], *, host: str, port: int, sock: Path
) -> list[Listener]:
    """What each listener serves: the Django app, marked by listener. (A WSGI "hot lane" that
    answered the hooks' routes beneath Django's handler was measured at 3.4% of an installed
    hook's wall time and removed: docs/history/hot-lane.md.)"""
    app = django_app
    return [
        (tcp_app(app), (host, port)),
        # 0600 inside the 0700 data dir: hooks, CLI and MCP connect here.
        (owner_socket_app(app), sock),
    ]


def _raise_stop(signum: int, frame: object) -> None:
    raise _Stop


def _skip_redis_unless_used() -> None:
    """huey imports the redis client at import time for its Redis storage (and redis pulls
    in asyncio and cryptography: ~12 MB resident). The local worker's queue is SQLite, so
    there the import is refused and huey keeps its no-redis fallback; team mode
    (CLAUDE_MEM_QUEUE_URL=redis://…) imports it as before."""
    if not config.get("CLAUDE_MEM_QUEUE_URL").startswith("redis") and "redis" not in sys.modules:
        sys.modules["redis"] = None  # type: ignore[assignment]


def _setting_changed_without_test_client() -> None:
    """Load Django's `django/test/signals.py` under its own name without its package's
    `__init__`, so django-ninja's `from django.test.signals import setting_changed`
    (ninja/conf.py, run by `import ninja` during django.setup) finds it in sys.modules and
    does not import `django.test` itself: the test client, the test cases, unittest and
    jinja2, about 65 ms of CPU in a start of ~600 (docs/benchmarks/startup.md). Nothing in
    the serving process uses `django.test`; `from django.test.signals import …` and a later
    `import django.test` still work (the package finds this submodule loaded). What does not
    is `import django.test.signals as x` before `django.test` itself is imported."""
    if "django.test" in sys.modules or "django.test.signals" in sys.modules:
        return
    # serving process only: the spec machinery is needed for this one file
    import importlib.util

    django_spec = importlib.util.find_spec("django")
    if django_spec is None or not django_spec.submodule_search_locations:
        return
    folder = Path(next(iter(django_spec.submodule_search_locations)))
    spec = importlib.util.spec_from_file_location(
        "django.test.signals", folder / "test" / "signals.py"
    )
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["django.test.signals"] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        # Django moved or changed the file: the ordinary import then, whatever it costs.
        del sys.modules["django.test.signals"]
        log.warning("django.test.signals could not be loaded alone", exc_info=True)


def _warm_urls() -> None:
    """Load the URL configuration (the API's routers and their schemas: a quarter of the
    start's CPU) now rather than in the first request, which would hold every request of
    the start behind it anyway; before the consumer's threads start, so they do not
    compete with it for the interpreter."""
    # after django.setup(): the URL configuration imports the views and models
    from django.urls import get_resolver

    try:
        get_resolver().url_patterns  # noqa: B018 - loading them is the point
    except Exception:  # the first request then reports the broken URLconf, as it would have
        log.exception("the URL configuration did not load")


def main() -> int:
    # No cyclic garbage collection while the start imports ~1,000 modules: every collection
    # walks all the objects made so far, ~10% of the start's CPU for next to nothing found.
    # after_bind() freezes what the start made (it lives as long as the process) and turns
    # collection back on for the requests.
    gc.disable()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cmem_site.settings")
    _skip_redis_unless_used()
    _setting_changed_without_test_client()
    # before setup: _skip_redis_unless_used() must run first; the Django pieces after setup
    import django

    django.setup()
    # after django.setup()
    from cmem_site.wsgi import django_application
    from memory.worker.inprocess_consumer import InProcessConsumer

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _raise_stop)
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    address = worker_address()
    threads = int(os.environ.get("CMEM_SERVER_THREADS", str(SERVER_THREADS)))
    sock = socket_path()
    apps = served_apps(django_application, host=address.host, port=address.port, sock=sock)
    consumer = None
    if os.environ.get("CMEM_WORKER_CONSUMER", "1") != "0":
        consumer = InProcessConsumer()

    def after_bind() -> None:
        # The sockets listen: requests queue in the backlog while the URLs load, then the
        # consumer's threads start (its start-up sweeps are background work).
        _warm_urls()
        gc.freeze()
        gc.enable()
        if consumer is not None:
            consumer.start()

    log.info("serving on %s and %s, %d threads", address.url, sock, threads)
    served_by_granian = False
    try:
        if os.environ.get("CMEM_SERVER", "granian") != "waitress" and _serve_granian(
            apps, threads, after_bind
        ):
            served_by_granian = True
            return 0
        _serve_waitress(apps, threads, after_bind)
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        if consumer is not None:
            consumer.stop()
        sock.unlink(missing_ok=True)
        if served_by_granian:
            _exit_before_finalizing()
    return 0


def _exit_before_finalizing() -> NoReturn:
    """Leave without the interpreter's finalization. granian's Rust threads wind down on
    their own after the stop signal; one that calls into Python while the interpreter
    finalizes (a stop right after a start) panics in a function that cannot unwind and
    aborts, printing the panic to worker.out. Everything of cmem's is stopped by now (the
    listeners, the consumer, the socket): close this thread's database connections, flush
    the logs and the streams, and exit. SQLite needs no more: what was committed is in its
    WAL, which the next connection reads."""
    # after the serving stopped: Django is loaded in this process already
    from django.db import connections

    connections.close_all()
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)


def _serve_granian(apps: list[Listener], threads: int, after_bind: Callable[[], None]) -> bool:
    """Serve until a stop signal; False (nothing bound) when granian cannot serve here.
    `after_bind` runs once the listeners are bound."""
    # optional at run time: granian may be unable to serve here (waitress is the fallback)
    from memory.worker.granian_serving import GranianUnavailable, start_listeners

    try:
        listeners = start_listeners(apps, threads)
    except GranianUnavailable as exc:
        log.warning("%s; serving with waitress instead", exc)
        return False
    try:
        after_bind()
        while True:
            signal.pause()  # the requests run on granian's threads; this one waits for _Stop
    except _Stop:
        pass
    finally:
        listeners.stop()  # no new connections; running requests get a few seconds
    return True


def _serve_waitress(apps: list[Listener], threads: int, after_bind: Callable[[], None]) -> None:
    from waitress import wasyncore  # type: ignore[import-untyped]
    from waitress.server import create_server  # type: ignore[import-untyped]
    from waitress.task import ThreadedTaskDispatcher  # type: ignore[import-untyped]

    # The body limit is Django's (CMEM_MAX_REQUEST_BYTES, answered 413 with the reason);
    # waitress's own is a backstop above it, so a client cannot make it buffer gigabytes.
    body_limit = 2 * int(os.environ.get("CMEM_MAX_REQUEST_BYTES", str(8 * 1024 * 1024)))
    common: dict[str, Any] = {
        "ident": "cmem",
        "max_request_body_size": body_limit,
        "channel_timeout": 60,
        "connection_limit": 200,
        "clear_untrusted_proxy_headers": True,
        "asyncore_use_poll": True,
    }
    dispatcher = ThreadedTaskDispatcher()
    dispatcher.set_thread_count(threads)
    shared_map: dict[int, Any] = {}
    servers = []
    for app, address in apps:
        where: dict[str, Any] = (
            {"unix_socket": str(address), "unix_socket_perms": "600"}
            if isinstance(address, Path)
            else {"host": address[0], "port": address[1]}
        )
        servers.append(
            create_server(app, map=shared_map, _dispatcher=dispatcher, **where, **common)
        )
    try:
        after_bind()  # create_server has bound and listens; the loop accepts from here
        servers[0].run()  # the loop serves every server registered in the shared map
    except _Stop:
        pass
    finally:
        # No new connections, then the running requests get a few seconds to finish.
        wasyncore.close_all(shared_map)
        dispatcher.shutdown(cancel_pending=True, timeout=5)


if __name__ == "__main__":
    sys.exit(main())
