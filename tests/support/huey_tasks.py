"""Running huey's delayed tasks in tests, where huey runs in immediate mode.

tests/testenv.py and tests/conftest.py put huey in immediate mode: an enqueued task runs
inline. A task scheduled with a delay is only parked in huey's in-memory schedule, and
capture schedules compression `COMPRESS_DELAY_S` after the hook's commit (so a burst of
tool uses compresses as one batch). Production code does not branch on immediate mode,
but for one thing: outside it, capture queues one task per burst of a session, not one per
tool use (memory/capture/ingest.py `_enqueue_processing`; its own test runs huey's SQLite
storage); a test that wants the compressed result calls `delayed_tasks_run()`: the real
task, as if its delay had passed.
"""

from __future__ import annotations

from datetime import datetime, timedelta


def delayed_tasks_run() -> int:
    """Run every task waiting in huey's schedule now; returns how many ran."""
    from huey.contrib.djhuey import HUEY

    assert HUEY.immediate, "only for huey's immediate mode (tests/conftest.py)"
    # Past any delay the code under test can ask for: read_schedule hands back what is due.
    later = datetime.now() + timedelta(days=1)
    tasks = HUEY.read_schedule(later)
    for task in tasks:
        HUEY.execute(task, timestamp=later)
    return len(tasks)
