"""Skip `migrate` at start when nothing about the schema changed since the last one.

`migrate` with nothing to apply still imports every migration and builds the project
state (a few hundred ms of a cold start). The stamp names what decides whether there is
work: the migration files shipped, Django's version (its contrib apps' migrations) and the
database file itself (path and inode, so a deleted or replaced file migrates again). Local
SQLite only: a shared PostgreSQL is migrated by whichever worker starts, every time.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

from memory import config

STAMP_NAME = "schema.stamp"


def stamp_path() -> Path:
    return config.data_dir() / STAMP_NAME


def current_stamp(database: dict[str, object]) -> str | None:
    """The stamp for this database now, or None when it must always migrate."""
    if database.get("ENGINE") != "django.db.backends.sqlite3":
        return None
    db_file = Path(str(database.get("NAME")))
    try:
        st = db_file.stat()
    except OSError:
        return None
    import django

    parts = [django.get_version(), str(db_file.resolve()), f"{st.st_dev}:{st.st_ino}"]
    root = Path(__file__).resolve().parents[2]
    for app in ("memory", "deliverables"):
        folder = root / app / "migrations"
        parts.extend(sorted(f"{app}/{p.name}:{p.stat().st_size}" for p in folder.glob("0*.py")))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def is_current(database: dict[str, object]) -> bool:
    stamp = current_stamp(database)
    if stamp is None:
        return False
    try:
        return stamp_path().read_text().strip() == stamp
    except OSError:
        return False


def record(database: dict[str, object]) -> None:
    stamp = current_stamp(database)
    if stamp is not None:
        config.write_atomic(stamp_path(), (stamp + "\n").encode())
    else:
        with contextlib.suppress(OSError):
            os.unlink(stamp_path())
