"""`cmem serve` without Django when there is nothing for Django to do first.

The serve command (memory/management/commands/serve.py) sets Django up only to check that no
worker runs, that the port is free, and to migrate; then it re-executes itself as the
supervisor, which imports no Django. On an unchanged local schema (the stamp:
memory/worker/schema_stamp.py) that was a whole Django start and one more interpreter
before the serving process even began: ~0.6 s of a 1 s cold start. Here the
same checks run on the standard library and the supervisor runs in this very process.

Anything off the happy path (a worker already running, a port held, a schema to migrate, a
shared PostgreSQL) goes to the Django command as before, so its messages and its
migrations stay in one place.
"""

from __future__ import annotations

import os
import time

from memory import config
from memory.worker import lifecycle, schema_stamp
from memory.worker.state import port_is_free, worker_address


def serve_if_ready(*, migrate: bool = True) -> int | None:
    """Run the supervisor here and return its exit code, or None when the Django command
    must do the start (its checks say something, or there are migrations to apply).
    `migrate=False` is `cmem serve --no-migrate`: the stamp is not asked."""
    # What importing Django's settings did to this process before the supervisor ran:
    # cmem_site/settings.py's umask (everything cmem writes is the user's only), and
    # Django's TZ from TIME_ZONE (the supervisor's log lines carry the same zone as the
    # server's; memory.config has kept the machine's own zone in CMEM_MACHINE_TZ).
    os.umask(0o077)
    os.environ["TZ"] = os.environ.get("CMEM_TIME_ZONE", "UTC")
    time.tzset()
    config.ensure_data_dir()
    database = schema_stamp.local_database()
    if database is None or (migrate and not schema_stamp.is_current(database)):
        return None
    if lifecycle.worker_state(with_health=False).running:
        return None
    address = worker_address()
    if not port_is_free(address):
        return None
    # only when the fast start goes ahead (no migrations, port free)
    from memory.worker.supervisor import main as supervise

    return supervise()
