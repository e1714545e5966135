"""Skip `migrate` at start when nothing about the schema changed since the last one.

`migrate` with nothing to apply still imports every migration and builds the project
state (a few hundred ms of a cold start). The stamp names what decides whether there is
work: the migration files shipped, Django's version (its contrib apps' migrations) and the
database file itself (path and inode, so a deleted or replaced file migrates again). Local
SQLite only: a shared PostgreSQL is migrated by whichever worker starts, every time.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from pathlib import Path

from memory import config

STAMP_NAME = "schema.stamp"


def stamp_path() -> Path:
    return config.data_dir() / STAMP_NAME


def local_database() -> dict[str, object] | None:
    """settings.DATABASES["default"]'s engine and file, read without Django (the fast start,
    memory/worker/fast_start.py), or None for a PostgreSQL (always migrated).
    cmem_site/settings.py `_database()` is the one that Django uses; a test pins the two
    together."""
    url = config.load().get("CLAUDE_MEM_DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        return None
    return {"ENGINE": "django.db.backends.sqlite3", "NAME": config.data_dir() / "cmem.sqlite3"}


def current_stamp(database: dict[str, object]) -> str | None:
    """The stamp for this database now, or None when it must always migrate."""
    if database.get("ENGINE") != "django.db.backends.sqlite3":
        return None
    db_file = Path(str(database.get("NAME")))
    try:
        st = db_file.stat()
    except OSError:
        return None
    parts = [_django_release(), str(db_file.resolve()), f"{st.st_dev}:{st.st_ino}"]
    root = Path(__file__).resolve().parents[2]
    for app in ("memory", "deliverables"):
        folder = root / app / "migrations"
        parts.extend(sorted(f"{app}/{p.name}:{p.stat().st_size}" for p in folder.glob("0*.py")))
    # The lines themselves, not a digest: the fast start runs in the supervisor's process,
    # which stays without hashlib's OpenSSL (memory/worker/supervisor.py).
    return "\n".join(parts)


def _django_release() -> str:
    """Which Django is installed, without importing it (the fast start has no Django): its
    distribution's metadata folder names the version, and its package file changes with
    any reinstall."""
    spec = importlib.util.find_spec("django")
    if spec is None or spec.origin is None:
        return "no django"
    init = Path(spec.origin)
    site = init.parent.parent
    releases = sorted(p.name for p in site.glob("[Dd]jango-*.dist-info"))
    st = init.stat()
    return f"{','.join(releases)} {init}:{st.st_size}:{st.st_mtime_ns}"


def is_current(database: dict[str, object]) -> bool:
    stamp = current_stamp(database)
    if stamp is None:
        return False
    try:
        return stamp_path().read_text().strip() == stamp.strip()
    except OSError:
        return False


def record(database: dict[str, object]) -> None:
    stamp = current_stamp(database)
    if stamp is not None:
        config.write_atomic(stamp_path(), (stamp + "\n").encode())
    else:
        with contextlib.suppress(OSError):
            os.unlink(stamp_path())
