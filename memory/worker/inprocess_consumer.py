"""The huey consumer's workers as threads of the serving process.

A separate consumer process cost ~70 MB resident for a queue that is idle most of the day.
Here huey's own `Consumer` builds its scheduler and worker threads as usual (same on-startup
hooks, same periodic tasks, same claims), but this process keeps its signal handlers: huey's
`Consumer.start()` would install its own, and only the main thread may do that. Its health
check (a dead worker thread is replaced) runs on a thread of ours instead of huey's main loop.

Its tasks give way to requests: each starts only once no hook or search is in flight (and
none for a moment), at most a second later (memory/runtime/foreground.py), and a
compression run waits so between its batches (and the serving process's switch interval is
short: memory/worker/server.py).

Durability is unchanged: events live in the database, not in the queue, and a worker
killed with the process is replaced by the supervisor's restart, whose start-up sweep hands
its claimed events back (memory/tasks.py).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from django.conf import settings
from django.utils.module_loading import autodiscover_modules
from huey.contrib.djhuey import HUEY

from memory.runtime.foreground import quiet_wait

log = logging.getLogger(__name__)

HEALTH_CHECK_EVERY_S = 10.0
QUIET_HOOK = "cmem-after-requests"


# Tasks between dequeue and execution (in the hook below): `stop` waits for them too.
_starting = 0
_starting_lock = threading.Lock()


def _after_requests(task: Any) -> None:
    global _starting
    with _starting_lock:
        _starting += 1
    try:
        quiet_wait()
    finally:
        with _starting_lock:
            _starting -= 1


class InProcessConsumer:
    def __init__(self) -> None:
        # The tasks modules register their tasks and hooks on import, as run_huey does.
        autodiscover_modules("tasks")
        huey_settings: dict[str, Any] = settings.HUEY
        options: dict[str, Any] = dict(huey_settings.get("consumer") or {})
        options["worker_type"] = "thread"
        options.pop("verbose", None)
        self.huey = HUEY
        self.consumer = HUEY.create_consumer(**options)
        HUEY.pre_execute(name=QUIET_HOOK)(_after_requests)
        self._stop = threading.Event()
        self._health: threading.Thread | None = None

    def start(self) -> None:
        consumer = self.consumer
        consumer.scheduler.start()
        for _, thread in consumer.worker_threads:
            thread.start()
        self._health = threading.Thread(
            target=self._check_health, name="cmem-consumer-health", daemon=True
        )
        self._health.start()
        log.info("consumer started in the serving process: %d thread(s)", consumer.workers)

    def _check_health(self) -> None:
        while not self._stop.wait(HEALTH_CHECK_EVERY_S):
            try:
                self.consumer.check_worker_health()
            except Exception:  # the check itself must never take the server down
                log.exception("consumer health check failed")

    def _busy(self) -> bool:
        """A task is running or about to (huey's own in-flight set, which
        notify_interrupted_tasks reads too, and the tasks waiting in our pre-execute hook)."""
        alive = any(thread.is_alive() for _, thread in self.consumer.worker_threads)
        return alive and bool(_starting or self.huey._tasks_in_flight)

    def stop(self, timeout: float = 8.0) -> None:
        """Let running tasks finish (up to `timeout`), then record the interrupted ones.
        Nothing to do when it never started (the server stopped while binding)."""
        if self._health is None:
            return
        self._stop.set()
        self.consumer.stop_flag.set()
        self.huey.unregister_pre_execute(QUIET_HOOK)
        # Wait for running tasks, not for idle threads: an idle huey worker sleeps in
        # time.sleep for up to its max_delay (10 s) before it looks at the stop flag, and
        # joining it made every `cmem stop` wait that long. The threads are daemons, so an
        # idle one is simply left behind as the process exits.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self._busy():
            time.sleep(0.02)
        try:
            self.huey.notify_interrupted_tasks()
        except Exception:  # best effort at exit: the start-up sweep recovers the rest
            log.exception("could not record interrupted tasks")
