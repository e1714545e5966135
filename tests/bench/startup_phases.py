"""`python -m tests.bench.startup_phases`: where the serving process's start goes, step by step.

Run on a migrated data dir (CLAUDE_MEM_DATA_DIR); docs/benchmarks/startup.md quotes it. Its
own module, importing nothing at the top but the standard library, so the steps pay for
everything they import, as in the serving process (`python -m tests.bench startup` times the
whole start from outside).
"""

from __future__ import annotations

import os
import sys
import time


def phases() -> list[tuple[str, float, float]]:
    """The serving process's start in this process, step by step as memory/worker/server.py
    `main` takes it (without binding): (step, wall ms, CPU ms) of each, the first
    /api/health through the WSGI app last. CPU (getrusage) holds up on a loaded machine
    where wall time does not. Run on a migrated data dir (CLAUDE_MEM_DATA_DIR)."""
    # the steps are what is timed: nothing is imported before its step
    import gc
    import io
    import resource

    def cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    steps: list[tuple[str, float, float]] = []
    last = [time.perf_counter(), cpu()]

    def mark(step: str) -> None:
        now = [time.perf_counter(), cpu()]
        steps.append((step, (now[0] - last[0]) * 1000, (now[1] - last[1]) * 1000))
        last[:] = now

    gc.disable()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cmem_site.settings")
    # the steps are what is timed: each import happens where the serving process does it
    from memory.worker import server

    server._skip_redis_unless_used()
    server._setting_changed_without_test_client()
    mark("import memory.worker.server (config, credentials, state)")
    # timed step: Django's own import and setup
    import django

    django.setup()
    mark("django.setup() (settings, logging, apps and models, ninja, memory.tasks)")
    # timed step: after django.setup(), as in the serving process
    from cmem_site.wsgi import django_application
    from memory.worker.inprocess_consumer import InProcessConsumer

    consumer = InProcessConsumer()
    mark("WSGI handler and middleware, consumer built")
    # timed step: what serving with granian imports
    import importlib

    from memory.worker import granian_serving  # noqa: F401

    importlib.import_module("granian._granian")
    mark("granian imported")
    server._warm_urls()
    mark("URL configuration (the API's routers and schemas, the pages)")
    gc.freeze()
    gc.enable()
    environ = {
        "REQUEST_METHOD": "GET", "PATH_INFO": "/api/health", "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80", "HTTP_HOST": "127.0.0.1",
        "REMOTE_ADDR": "127.0.0.1", "wsgi.input": io.BytesIO(), "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
    }  # fmt: skip
    answer: list[str] = []
    django_application(environ, lambda status, headers, exc_info=None: answer.append(status))
    mark(f"first /api/health ({answer[0]})")
    del consumer  # built, as the serving process builds it, but never started
    return steps


if __name__ == "__main__":
    total_wall = total_cpu = 0.0
    for step, wall, used in phases():
        total_wall, total_cpu = total_wall + wall, total_cpu + used
        print(f"{used:7.1f} ms CPU {wall:8.1f} ms wall  {step}")
    print(
        f"{total_cpu:7.1f} ms CPU {total_wall:8.1f} ms wall  in all, after the interpreter's start"
    )
