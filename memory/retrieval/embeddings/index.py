"""Nearest rows by vector: a process-wide matrix per kind, scanned with one matrix product.

SQLite's default build here cannot load extensions (this machine's pyenv Python has no
`enable_load_extension`), so the portable path is the default: float16 blobs in
`memory_embedding`, held in memory as one float32 matrix per kind and refreshed when the
table changes. A refresh costs one `count(*)`/`max(id)` read per search; new rows are
appended, anything else (a delete, a re-embed) reloads the kind. The same code serves
PostgreSQL without pgvector.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import connection

from memory.retrieval.embeddings import TABLES, Kind

if TYPE_CHECKING:
    import numpy as np


@dataclass
class _Matrix:
    model: str
    count: int
    max_id: int
    generation: int
    ids: np.ndarray  # int64 object ids
    vectors: np.ndarray  # float32 (n, dim)


# Rows read from the table at a time when a kind loads: the load never holds every row's
# blob, their joined copy and the widened matrix at once (the three left ~5 MB of
# freed heap resident beside the 10 MB matrix of 10k rows).
LOAD_BATCH = 1024

_lock = threading.Lock()
_cache: dict[tuple[str, str, Kind, int | None], _Matrix] = {}


# Rows read per query by `nearest_of`: 2,000 float16 vectors of 384 dims are 1.5 MB.
SLICE = 2000


def kinds_stored(kinds: list[Kind]) -> list[Kind]:
    """Which of `kinds` have any vector (of any model) stored: one round trip, one index
    probe per kind; a kind with none is not searched at all."""
    if not kinds:
        return []
    probes = ", ".join("EXISTS (SELECT 1 FROM memory_embedding WHERE kind = %s)" for _ in kinds)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {probes}", list(kinds))
        flags = cursor.fetchone()
    return [kind for kind, flag in zip(kinds, flags, strict=True) if flag]


def current_generation() -> int:
    """Bumped by a trigger on every insert or delete of a vector (migration 0006)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT n FROM memory_embedding_generation WHERE id = 1")
        row = cursor.fetchone()
    return int(row[0]) if row else -1


def _signature(kind: Kind, model: str) -> tuple[int, int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), coalesce(max(id), 0) FROM memory_embedding WHERE kind = %s AND model = %s",
            [kind, model],
        )
        count, max_id = cursor.fetchone()
    return int(count), int(max_id)


def _load(
    kind: Kind, model: str, after: int, dim: int, bound: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Vectors stored after vector row `after`, oldest first; only the newest `bound`."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    sql = (
        "SELECT object_id, vector FROM memory_embedding WHERE kind = %s AND model = %s AND id > %s"
    )
    params: list[str | int] = [kind, model, after]
    if bound is not None:
        sql = f"SELECT * FROM ({sql} ORDER BY id DESC LIMIT %s) newest"
        params.append(bound)
    id_parts: list[np.ndarray] = []
    stored: list[np.ndarray] = []  # float16 as stored, LOAD_BATCH rows each
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(LOAD_BATCH):
            id_parts.append(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)))
            blob = b"".join(bytes(r[1]) for r in rows)
            stored.append(np.frombuffer(blob, dtype=np.float16).reshape(len(rows), dim))
            del rows, blob
    if not id_parts:
        return np.zeros(0, dtype=np.int64), np.zeros((0, dim), dtype=np.float32)
    ids = np.concatenate(id_parts)
    vectors = np.empty((len(ids), dim), dtype=np.float32)
    start = 0
    while stored:  # widened part by part, each part freed as soon as it is copied
        part = stored.pop(0)
        vectors[start : start + len(part)] = part
        start += len(part)
    if bound is not None:
        ids, vectors = ids[::-1].copy(), vectors[::-1].copy()
    if len(ids) >= LOAD_BATCH:  # a whole kind (or many new rows), not the usual few
        release_free_heap()
    return ids, vectors


def release_free_heap() -> None:
    """Hand the heap's free pages back to the OS after a load (glibc keeps them otherwise:
    the rows and blobs a load frees, and the model's, which loads just before the first
    scan). Linux/glibc only; a no-op elsewhere."""
    global _malloc_trim
    if _malloc_trim is None:
        try:
            # Linux/glibc only, once: a failed load is a no-op elsewhere
            import ctypes

            _malloc_trim = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):
            _malloc_trim = False
    if _malloc_trim:
        _malloc_trim(0)


_malloc_trim: Any = None


def matrix(
    kind: Kind, model: str, dim: int, bound: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(ids, vectors) of every stored vector of `kind` made by `model`, current as of now;
    with `bound`, of the newest `bound` only (the PostgreSQL fallback's bounded scan)."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    key = (connection.alias + ":" + str(connection.settings_dict.get("NAME")), model, kind, bound)
    generation = current_generation()
    cached = _cache.get(key)
    if cached and cached.generation == generation:
        return cached.ids, cached.vectors
    count, max_id = _signature(kind, model)
    with _lock:
        cached = _cache.get(key)
        if cached and (cached.count, cached.max_id) == (count, max_id):
            cached.generation = generation
            return cached.ids, cached.vectors
        if cached and max_id > cached.max_id:
            ids, vectors = _load(kind, model, cached.max_id, dim, bound)
            if cached.count + len(ids) == count:
                keep = -bound if bound is not None else 0
                # One contiguous float32 block per kind: the scan is a single matmul.
                cached.ids = np.concatenate([cached.ids, ids])[keep:]
                cached.vectors = np.ascontiguousarray(
                    np.concatenate([cached.vectors, vectors])[keep:]
                )
                cached.count, cached.max_id, cached.generation = count, max_id, generation
                return cached.ids, cached.vectors
        ids, vectors = _load(kind, model, 0, dim, bound)
        _cache[key] = _Matrix(model, count, max_id, generation, ids, vectors)
        return ids, vectors


def nearest(
    kind: Kind,
    model: str,
    query: np.ndarray,
    *,
    k: int,
    allowed: set[int] | None = None,
    min_score: float = 0.0,
    bound: int | None = None,
) -> list[tuple[float, int]]:
    """The `k` rows most similar to `query` (a unit vector), best first, as (cosine, id);
    `allowed` restricts the scan to those ids (the filtered rows), `bound` to the newest
    `bound` vectors."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    ids, vectors = matrix(kind, model, int(query.shape[0]), bound)
    if not len(ids) or k <= 0:
        return []
    if allowed is not None:
        mask = np.isin(ids, np.fromiter(allowed, dtype=np.int64, count=len(allowed)))
        ids, vectors = ids[mask], vectors[mask]
        if not len(ids):
            return []
    return best_of(ids, vectors @ query, k, min_score)


def best_of(
    ids: np.ndarray, scores: np.ndarray, k: int, min_score: float
) -> list[tuple[float, int]]:
    """The `k` best (score, id) pairs above `min_score`, best first (ties in id order)."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    top = np.argpartition(-scores, k - 1)[:k] if len(scores) > k else np.arange(len(scores))
    top = top[np.argsort(-scores[top], kind="stable")]
    return [(float(scores[i]), int(ids[i])) for i in top if scores[i] > min_score]


def clear() -> None:
    with _lock:
        _cache.clear()
        _null.clear()


def decoded(rows: list[tuple[int, bytes]]) -> tuple[np.ndarray, np.ndarray]:
    """(ids, float32 vectors) of (object_id, float16 bytes) rows as `memory_embedding` holds them."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    blob = b"".join(bytes(r[1]) for r in rows)
    vectors = np.frombuffer(blob, dtype=np.float16).reshape(len(rows), -1).astype(np.float32)
    return ids, vectors


def vectors_of(kind: Kind, model: str, object_ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(ids, vectors) of these rows read from the table (the fallback's keyword candidates)."""
    if not object_ids:
        return decoded([])
    marks = ", ".join(["%s"] * len(object_ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT object_id, vector FROM memory_embedding WHERE kind = %s AND model = %s "
            f"AND object_id IN ({marks})",
            [kind, model, *object_ids],
        )
        return decoded(cursor.fetchall())


def nearest_of(
    kind: Kind,
    model: str,
    query: np.ndarray,
    object_ids: list[int],
    *,
    k: int,
    min_score: float = 0.0,
) -> list[tuple[float, int]]:
    """`nearest` over just these rows, read from the table a slice at a time: where no matrix
    is held (PostgreSQL without pgvector), a filtered scan must not load every vector of the
    kind to keep the few it allows."""
    best: list[tuple[float, int]] = []
    for at in range(0, len(object_ids), SLICE):
        ids, vectors = vectors_of(kind, model, object_ids[at : at + SLICE])
        if not len(ids) or vectors.shape[1] != query.shape[0]:
            continue
        best += best_of(ids, vectors @ query, k, min_score)
        best = sorted(best, key=lambda row: row[0], reverse=True)[:k]
    return best


def live_vectors(kind: Kind, model: str, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(ids, float32 vectors) of these rows' live vectors, read from `memory_embedding`
    (SQLite: the ids go in as one JSON array).

    One probe of the (kind, object_id) unique index per id, forced by the CROSS JOIN: with
    hundreds of ids in an `IN (...)`, SQLite chose the (kind, model) index instead and read
    every vector of the kind (70 ms for 800 ids at 100k rows, against 2 ms)."""
    # optional dependency (numpy: the embeddings extra)

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT e.object_id, e.vector FROM json_each(%s) AS j CROSS JOIN memory_embedding "
            "AS e WHERE e.kind = %s AND e.object_id = j.value AND e.model = %s",
            [json.dumps(ids), kind, model],
        )
        return decoded(cursor.fetchall())


# What a query scores against the store at large is read off this many stored vectors.
NULL_SAMPLE = 1000
# (generation, rows stored, sample) per database, model, kind and owner.
_null: dict[tuple[str, str, Kind, int | None], tuple[int, int, np.ndarray]] = {}


def null_sample(
    kind: Kind, model: str, dim: int, owner: int | None = None
) -> tuple[np.ndarray, int]:
    """(vectors, rows stored): up to NULL_SAMPLE stored vectors of `kind` by `model`, spread
    evenly over its history (every n-th vector row), and how many it has in all; with
    `owner` (team mode), of that user's rows only, so another user's memory never moves a
    viewer's ranking. Read again when the count has moved by a tenth since: the
    distribution moves slowly."""
    key = (connection.alias + ":" + str(connection.settings_dict.get("NAME")), model, kind, owner)
    generation = current_generation()
    cached = _null.get(key)
    if cached and cached[0] == generation:
        return cached[2], cached[1]
    scope, params = "", []
    if owner is not None:
        scope = (
            f" AND object_id IN (SELECT t.id FROM {TABLES[kind]} t JOIN memory_session s "
            "ON s.id = t.session_id WHERE s.owner_id = %s)"
        )
        params = [owner]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM memory_embedding WHERE kind = %s AND model = %s{scope}",
            [kind, model, *params],
        )
        stored = int(cursor.fetchone()[0])
    if cached and abs(cached[1] - stored) * 10 <= max(cached[1], 1):
        _null[key] = (generation, stored, cached[2])
        return cached[2], stored
    step = max(1, stored // NULL_SAMPLE)
    sample = _vectors(
        f"SELECT vector FROM memory_embedding WHERE kind = %s AND model = %s{scope} "
        "AND id %% %s = 0 LIMIT %s",
        [kind, model, *params, step, NULL_SAMPLE],
        dim,
    )
    if len(sample) < NULL_SAMPLE // 2 and stored > len(sample):
        # The ids of this kind and model are not spread evenly (another kind's or model's
        # rows took the multiples): the newest rows then, still a fair picture of noise.
        sample = _vectors(
            f"SELECT vector FROM memory_embedding WHERE kind = %s AND model = %s{scope} "
            "ORDER BY id DESC LIMIT %s",
            [kind, model, *params, NULL_SAMPLE],
            dim,
        )
    _null[key] = (generation, stored, sample)
    return sample, stored


def _vectors(sql: str, params: list[Any], dim: int) -> np.ndarray:
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        blob = b"".join(bytes(row[0]) for row in cursor.fetchall())
    return np.frombuffer(blob, dtype=np.float16).reshape(-1, dim).astype(np.float32)
