"""Nearest rows through sqlite-vec: a derived `vec0` index in a database file of its own.

Why a file of its own: a `vec0` virtual table (or a trigger touching one) inside cmem's
database would break every connection that has not loaded the extension ("no such module:
vec0"): a `cmem` run by a Python without `enable_load_extension`, the hooks' direct sqlite3
connections (memory/runtime/compiled_sql.py). So `memory_embedding` stays the one source of truth and this
file is a copy any process may delete: it is rebuilt from the table, and synced on each
search from the generation row a trigger bumps on every insert or delete of a vector
(migration 0006). Vectors follow their rows: a search never returns a row that has no live
vector (every candidate is re-scored from `memory_embedding`, so a row deleted a moment ago
is dropped and purged from the file at once), and the sync after any deletion removes
every vector whose row has gone.

One `vec0` table per kind (float32, cosine) plus a plain table of the `memory_embedding`
row id each vector came from (reading ids from a `vec0` auxiliary column took 340 ms at
100k rows, a plain table a few).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import logging
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db import connection

from memory import config
from memory.retrieval.embeddings import Kind, index

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

# sqlite-vec's KNN answers at most this many rows per query (its own limit).
MAX_K = 4096
# Candidates fetched beyond `k`: sqlite-vec ranks by cosine of the float32 copies, the scan
# by the dot product of the stored float16 vectors (not exactly unit length), so the order
# can differ by ~1e-4 at the boundary; the extra rows are re-scored exactly and cut.
MARGIN = 16
# Rows written per executemany while a kind is (re)built.
WRITE_BATCH = 2048


@functools.cache
@functools.cache
def unavailable_reason() -> str:
    """Why sqlite-vec cannot be used by this interpreter, or "" when it loads. Asked on every
    search (`vector_index.choice`), and the answer cannot change within a process: found
    once, not by loading the extension into a new connection each time."""
    if not hasattr(sqlite3.Connection, "enable_load_extension"):
        return (
            "this Python's sqlite3 cannot load extensions (it was built without "
            "enable_load_extension)"
        )
    if importlib.util.find_spec("sqlite_vec") is None:
        return "the sqlite-vec package is not installed (it comes with the embeddings extra)"
    try:
        probe = sqlite3.connect(":memory:")
        try:
            _load_extension(probe)
            probe.execute("SELECT vec_version()").fetchone()
        finally:
            probe.close()
    except (sqlite3.Error, AttributeError, OSError) as exc:
        return f"loading sqlite-vec failed: {exc}"
    return ""


def loadable() -> bool:
    return not unavailable_reason()


def version() -> str:
    # optional dependency (sqlite-vec: the embeddings extra)
    import sqlite_vec

    return str(sqlite_vec.__version__)


def _load_extension(conn: sqlite3.Connection) -> None:
    # optional dependency (sqlite-vec: the embeddings extra)
    import sqlite_vec

    conn.enable_load_extension(True)
    try:
        sqlite_vec.load(conn)
    finally:
        conn.enable_load_extension(False)  # nothing else this connection runs may load one


def source_key() -> str:
    """Which cmem database this process searches (tests switch between many)."""
    return f"{connection.alias}:{connection.settings_dict.get('NAME')}"


def path() -> Path:
    """The derived index's file, in the data dir, named after the database it copies."""
    digest = hashlib.sha1(source_key().encode()).hexdigest()[:12]
    return config.data_dir() / "vectors" / f"vec0-{digest}.sqlite3"


def _source_identity() -> str:
    """The database file's inode: a restored or recreated database reuses row ids, so a
    copy made from another file must not be trusted (it is rebuilt)."""
    name = str(connection.settings_dict.get("NAME") or "")
    with contextlib.suppress(OSError, ValueError):
        return str(os.stat(name).st_ino)
    return name


_local = threading.local()


def _conn() -> sqlite3.Connection:
    """This thread's connection to the derived file (sqlite3 connections are per thread).
    A file that is not a database (damaged, truncated) is deleted and made anew: it holds
    nothing that `memory_embedding` does not."""
    target = path()
    conns: dict[Path, sqlite3.Connection] = _local.__dict__.setdefault("conns", {})
    conn = conns.get(target)
    if conn is None:
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            conn = _open(target)
        except sqlite3.DatabaseError as exc:
            log.warning("vector index: %s is damaged (%s); building it again", target, exc)
            for suffix in ("", "-wal", "-shm"):
                target.with_name(target.name + suffix).unlink(missing_ok=True)
            conn = _open(target)
        for other in [p for p in conns if p != target]:  # tests switch data dirs constantly
            conns.pop(other).close()
        conns[target] = conn
    return conn


def _open(target: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(target, isolation_level=None, check_same_thread=True)
    try:
        with contextlib.suppress(OSError):
            os.chmod(target, 0o600)
        _load_extension(conn)
        conn.execute("PRAGMA busy_timeout = 5000")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        conn.execute(
            "CREATE TABLE IF NOT EXISTS synced (kind TEXT PRIMARY KEY, model TEXT, "
            "dim INTEGER, generation INTEGER, count INTEGER, max_id INTEGER)"
        )
        identity = _source_identity()
        row = conn.execute("SELECT value FROM meta WHERE key = 'source'").fetchone()
        if row is None or row[0] != identity:
            _wipe(conn)
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('source', ?)", [identity])
    except BaseException:
        conn.close()
        raise
    return conn


def _tables(kind: Kind) -> tuple[str, str]:
    return f"vec_{kind}", f"ids_{kind}"


def _wipe(conn: sqlite3.Connection) -> None:
    for (name,) in conn.execute("SELECT kind FROM synced").fetchall():
        for table in _tables(name):
            conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute("DELETE FROM synced")


def drop(kind: Kind) -> None:
    """Forget `kind`'s copy (the scan serves it): nothing stale is left on disk."""
    conn = _conn()
    conn.execute("BEGIN IMMEDIATE")
    try:
        for table in _tables(kind):
            conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute("DELETE FROM synced WHERE kind = ?", [kind])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _live_pairs(kind: Kind, model: str) -> dict[int, int]:
    """{object_id: memory_embedding id} of every live vector of `kind` by `model`."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT object_id, id FROM memory_embedding WHERE kind = %s AND model = %s",
            [kind, model],
        )
        return dict(cursor.fetchall())


def _rows_after(kind: Kind, model: str, after: int) -> Iterator[list[tuple[int, int, bytes]]]:
    """(object_id, id, float32 bytes) of vectors stored after row `after`, WRITE_BATCH at
    a time (a build of 100k rows never holds them all)."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT object_id, id, vector FROM memory_embedding "
            "WHERE kind = %s AND model = %s AND id > %s ORDER BY id",
            [kind, model, after],
        )
        while part := cursor.fetchmany(WRITE_BATCH):
            yield [
                (oid, eid, np.frombuffer(bytes(b), dtype=np.float16).astype(np.float32).tobytes())
                for oid, eid, b in part
            ]


def _write(conn: sqlite3.Connection, kind: Kind, batches: Iterable[list[Any]]) -> None:
    """Insert or replace these vectors (a re-embedded row arrives under a new id)."""
    vec, ids = _tables(kind)
    for part in batches:
        # vec0 has no INSERT OR REPLACE: delete first.
        conn.executemany(f"DELETE FROM {vec} WHERE object_id = ?", [(r[0],) for r in part])
        conn.executemany(
            f"INSERT INTO {vec}(object_id, embedding) VALUES (?, ?)", [(r[0], r[2]) for r in part]
        )
        conn.executemany(
            f"INSERT OR REPLACE INTO {ids}(object_id, embedding_id) VALUES (?, ?)",
            [(r[0], r[1]) for r in part],
        )


def _purge(conn: sqlite3.Connection, kind: Kind, object_ids: list[int]) -> None:
    vec, ids = _tables(kind)
    conn.executemany(f"DELETE FROM {vec} WHERE object_id = ?", [(pk,) for pk in object_ids])
    conn.executemany(f"DELETE FROM {ids} WHERE object_id = ?", [(pk,) for pk in object_ids])


def _create(conn: sqlite3.Connection, kind: Kind, dim: int) -> None:
    vec, ids = _tables(kind)
    conn.execute(f"DROP TABLE IF EXISTS {vec}")
    conn.execute(f"DROP TABLE IF EXISTS {ids}")
    conn.execute(
        f"CREATE VIRTUAL TABLE {vec} USING vec0("
        f"object_id INTEGER PRIMARY KEY, embedding float[{int(dim)}] distance_metric=cosine)"
    )
    conn.execute(f"CREATE TABLE {ids} (object_id INTEGER PRIMARY KEY, embedding_id INTEGER)")


def _reconcile(conn: sqlite3.Connection, kind: Kind, model: str) -> None:
    """Make the copy hold exactly the live (object_id, id) pairs: purge the rest, and
    write what is missing (only a database changed behind the copy's back lacks any)."""
    _, ids = _tables(kind)
    live = _live_pairs(kind, model)
    held = dict(conn.execute(f"SELECT object_id, embedding_id FROM {ids}").fetchall())
    _purge(conn, kind, [pk for pk, eid in held.items() if live.get(pk) != eid])
    missing = {pk for pk, eid in live.items() if held.get(pk) != eid}
    if missing:
        batches = _rows_after(kind, model, 0)
        _write(conn, kind, ([r for r in part if r[0] in missing] for part in batches))


def sync(kind: Kind, model: str, dim: int) -> int:
    """Bring `kind`'s copy up to date with `memory_embedding`; returns its vector count.

    The usual search costs one read of the generation row on each side. New vectors (ids
    only grow) are appended; when the counts then disagree, rows were deleted, and the copy
    is reconciled against the live (object_id, id) pairs, which purges them."""
    conn = _conn()
    generation = index.current_generation()
    row = conn.execute(
        "SELECT model, dim, generation, count, max_id FROM synced WHERE kind = ?", [kind]
    ).fetchone()
    if row and row[0] == model and row[1] == dim and row[2] == generation:
        return int(row[3])
    count, max_id = index._signature(kind, model)
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Read again under the write lock: another process may have synced meanwhile.
        row = conn.execute(
            "SELECT model, dim, generation, count, max_id FROM synced WHERE kind = ?", [kind]
        ).fetchone()
        _, ids = _tables(kind)
        if not row or row[0] != model or row[1] != dim:
            _create(conn, kind, dim)
            _write(conn, kind, _rows_after(kind, model, 0))
        elif (row[3], row[4]) != (count, max_id):
            if max_id > row[4]:
                _write(conn, kind, _rows_after(kind, model, row[4]))
            held = conn.execute(f"SELECT count(*) FROM {ids}").fetchone()[0]
            if max_id < row[4] or held != count:  # rows deleted (the newest among them?)
                _reconcile(conn, kind, model)
        conn.execute(
            "INSERT OR REPLACE INTO synced VALUES (?, ?, ?, ?, ?, ?)",
            [kind, model, dim, generation, count, max_id],
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return count


def held_ids(kind: Kind) -> set[int]:
    """The object ids whose vectors the copy holds (what a purge must have removed)."""
    vec, _ = _tables(kind)
    try:
        return {r[0] for r in _conn().execute(f"SELECT object_id FROM {vec}").fetchall()}
    except sqlite3.OperationalError:  # no copy of this kind
        return set()


def _knn(kind: Kind, query: np.ndarray, k: int) -> list[tuple[int, float]]:
    """(id, cosine) of the copy's `k` nearest, best first."""
    vec, _ = _tables(kind)
    rows = _conn().execute(
        f"SELECT object_id, distance FROM {vec} WHERE embedding MATCH ? AND k = ? "
        "ORDER BY distance",
        [query.astype("float32").tobytes(), k],
    )
    return [(r[0], 1.0 - r[1]) for r in rows.fetchall()]


def _rescored(
    kind: Kind, model: str, query: np.ndarray, ids: list[int], *, from_copy: bool
) -> list[tuple[float, int]]:
    """(dot product, id) from the live `memory_embedding` rows, as the scan computes it.
    `from_copy`: the ids came from the copy, so one with no live vector was deleted since
    the last sync, and is purged from the copy now."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    found, vectors = index.live_vectors(kind, model, ids)
    gone = set(ids) - {int(pk) for pk in found} if from_copy else set()
    if gone:
        conn = _conn()
        conn.execute("BEGIN IMMEDIATE")
        _purge(conn, kind, sorted(gone))
        conn.execute("COMMIT")
    if not len(found):
        return []
    scores = vectors @ query.astype(np.float32)
    return [(float(s), int(pk)) for s, pk in zip(scores, found, strict=True)]


def nearest(
    kind: Kind,
    model: str,
    query: np.ndarray,
    *,
    k: int,
    allowed: set[int] | None = None,
    min_score: float = 0.0,
) -> list[tuple[float, int]]:
    """`index.nearest`'s answer through the copy: the same rows, scores and order (up to
    float ties). With `allowed` (the filtered rows), a small set is scored directly from
    its stored vectors; a large one over-fetches from the copy until `k` allowed rows are
    found, the copy is exhausted, or the rows fetched fall below `min_score`."""
    if k <= 0:
        return []
    count = sync(kind, model, int(query.shape[0]))
    if not count:
        return []
    if allowed is not None and len(allowed) <= MAX_K:
        scored = _rescored(kind, model, query, sorted(allowed), from_copy=False)
    else:
        deep = k + MARGIN if allowed is None else max(4 * (k + MARGIN), 256)
        want = min(count, MAX_K, deep)
        while True:
            found = _knn(kind, query, want)
            ids = [pk for pk, _ in found if allowed is None or pk in allowed]
            scored = _rescored(kind, model, query, ids, from_copy=True)
            if allowed is None or len(scored) >= k + MARGIN or want >= count:
                break
            if found and found[-1][1] < min_score - 1e-3:
                break  # every row further away scores below the threshold anyway
            if want >= MAX_K:  # the copy cannot answer deeper: score the filtered rows
                scored = _rescored(kind, model, query, sorted(allowed), from_copy=False)
                break
            want = min(count, MAX_K, want * 4)
    scored.sort(key=lambda pair: pair[0], reverse=True)
    return [pair for pair in scored[:k] if pair[0] > min_score]
