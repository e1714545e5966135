"""Nearest rows from an int8 copy on disk, read in bounded chunks: RSS flat in the row count.

The in-heap scan (`index.py`) holds one float32 matrix per kind (150 MB per process at
100k vectors of 384 dims), so a worker's memory grew with its store. This path keeps a
derived copy of each kind in a file of its own in the data dir (`vectors/q8-…-<kind>.bin`):
one record per vector, (object id int64, scale float32, dim int8 codes), each row's codes
its float16 values divided by `scale` = max|v| / 127 and rounded. A search reads the file
with `os.pread`, CHUNK rows at a time (the page cache holds the file, not the process:
no mmap, whose touched pages would count in RSS), scores each chunk with one matrix
product and keeps the best `k + MARGIN` over all chunks; those candidates are then
re-scored exactly from their live `memory_embedding` rows, the dot product the scan
computes, so the returned scores and order are the scan's (int8 only chooses the
candidates), and a row deleted since the last sync is simply not returned.

Beside it a sign-bit copy (`…-<kind>.bits`: one bit per dimension, 48 bytes a row at 384
dims, row i of it row i of the codes) gives large copies a coarse first pass: a search
ranks every row by the Hamming distance of its bits to the query's (XOR and popcount, an
eighth of the codes' bytes), reads only the nearest rows' codes by offset (OVERSAMPLE
times the depth) and scores those as above. Both files are written by the same appends and rebuilds and counted
by the same meta; a copy whose bits are missing or short is rebuilt.

Like vec0's copy (`vec0.py`) it is never the source of truth: synced on each search from
the generation row a trigger bumps on every insert or delete of a vector (migration 0006);
new vectors (ids only grow) are appended; when the counts then disagree (a deletion, a
re-embed) the file is rebuilt from the table and swapped in by rename; a copy made from
another database file (a restore reuses row ids), another model or dimension is rebuilt;
a damaged or deleted file is rebuilt. A sidecar JSON (written atomically, after the rows)
says how many rows are valid, so a crash mid-append leaves only bytes that are ignored and
overwritten. Writers take a lock on a lock file (memory/runtime/locks.py): several processes
may search one store.

No search waits for the copy to be written (seconds at 100k vectors): the minute sweep
brings every copy up to date in the background (`vector_index.prepare_copies`), and a search that finds the
copy missing or far behind (a first search, an import, a model change) starts that work in
a thread and answers from the copy as it stands, or, with none yet, by keyword with a note
(`embeddings.unavailable_note`; every search answers so until the copy is built). Where background work runs inline (`HUEY.immediate`: the
tests), the search syncs it itself.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db import connection
from huey.contrib.djhuey import HUEY

from memory import config
from memory.retrieval import embeddings
from memory.retrieval.embeddings import TABLES, Kind, index, vec0
from memory.runtime import locks

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

# Rows read per pread: 2048 rows of 384 dims are 0.8 MB of codes and a 3 MB float32 block
# while a chunk is scored, the whole of what a search holds beyond the candidates.
CHUNK = 2048
# Candidates beyond `k` re-scored exactly: int8 rounding moves a score by ~1e-3, so the
# scan's k-th row is among the copy's best k + MARGIN (recall@10 1.0 in the tests).
MARGIN = 64
# Copies of at least this many rows (and no `allowed` set) take the coarse pass over the
# sign bits first: below it the whole scan of the codes costs a few ms and the bits save
# little. A module constant so that tests can force either path.
COARSE_FROM = 20_000
# Rows whose codes the coarse pass reads: OVERSAMPLE times the depth asked for, at least
# COARSE_FLOOR (sign bits are a rough proxy for the cosine, so the true best rows can sit
# well down their Hamming order), at most COARSE_CEILING (each is one pread).
OVERSAMPLE = 16
COARSE_FLOOR = 1024
COARSE_CEILING = 16_384
# Sign-bit rows XOR-ed per read: 32768 rows of 48 bytes are 1.5 MB.
BITS_CHUNK = 32_768
# Written to the meta with a copy that has its sign-bit file: a copy made before the bits
# existed (no such key) is rebuilt.
BITS_FORMAT = 1
# An `allowed` set this small is scored directly from its stored vectors (one indexed
# probe per id), without reading the copy.
DIRECT = 4096
# Rows read from the table at a time while the copy is built or appended to.
WRITE_BATCH = 2048
# New vectors a search appends itself, or a first copy it builds itself (a few batches, well
# under a second); more (an import, the sweep catching up, a large store's first search) are
# written in the background while the copy answers as it stands (or, with none, keyword).
INLINE_APPEND = 4 * WRITE_BATCH

_lock = threading.Lock()
# Copies (their paths) a background thread of this process is building.
_building: set[str] = set()
_building_lock = threading.Lock()


def _dtype(dim: int) -> np.dtype[Any]:
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    return np.dtype([("oid", "<i8"), ("scale", "<f4"), ("codes", "i1", (dim,))])


def path(kind: Kind) -> Path:
    """The copy of `kind`, in the data dir, named after the database it copies."""
    digest = hashlib.sha1(vec0.source_key().encode()).hexdigest()[:12]
    return config.data_dir() / "vectors" / f"q8-{digest}-{kind}.bin"


def _meta_path(target: Path) -> Path:
    return target.with_suffix(".json")


def _bits_path(target: Path) -> Path:
    return target.with_suffix(".bits")


def _bits_size(dim: int) -> int:
    """Bytes of one row's sign bits, padded to whole uint64 words."""
    return (dim + 63) // 64 * 8


def _sign_bits(vectors: np.ndarray) -> np.ndarray:
    """(n, words) uint64: bit j of a row set where its dimension j is positive."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    n, dim = vectors.shape
    packed = np.zeros((n, _bits_size(dim)), dtype=np.uint8)
    packed[:, : (dim + 7) // 8] = np.packbits(vectors > 0, axis=1)
    return packed.view(np.uint64)


def _read_meta(target: Path) -> dict[str, Any]:
    try:
        meta = json.loads(_meta_path(target).read_text())
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _quantized(rows: list[tuple[int, bytes]], dim: int) -> tuple[bytes, bytes]:
    """The records of these (object_id, float16 blob) rows, and their sign bits."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    out = np.zeros(len(rows), dtype=_dtype(dim))
    out["oid"] = [r[0] for r in rows]
    vectors = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype=np.float16)
    vectors = vectors.reshape(len(rows), dim).astype(np.float32)
    scale = np.abs(vectors).max(axis=1) / 127.0
    scale[scale == 0] = 1.0  # an all-zero vector: codes 0 whatever the scale
    out["scale"] = scale
    out["codes"] = np.rint(vectors / scale[:, None]).clip(-127, 127).astype(np.int8)
    return out.tobytes(), _sign_bits(vectors).tobytes()


def _rows_after(kind: Kind, model: str, after: int) -> Iterator[list[tuple[int, bytes]]]:
    """(object_id, float16 blob) of vectors stored after row `after`, WRITE_BATCH at a time."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT object_id, vector FROM memory_embedding "
            "WHERE kind = %s AND model = %s AND id > %s ORDER BY id",
            [kind, model, after],
        )
        while part := cursor.fetchmany(WRITE_BATCH):
            yield part


def _append(fd: int, bits_fd: int, rows: int, kind: Kind, model: str, after: int, dim: int) -> int:
    """Write the vectors stored after row `after` from record `rows` on (codes and sign
    bits); returns rows written."""
    record, bits = _record_size(dim), _bits_size(dim)
    written = 0
    for part in _rows_after(kind, model, after):
        data, signs = _quantized(part, dim)
        os.pwrite(fd, data, (rows + written) * record)
        os.pwrite(bits_fd, signs, (rows + written) * bits)
        written += len(part)
    return written


def _rebuild(target: Path, kind: Kind, model: str, dim: int) -> int:
    """Write the whole copy (codes and sign bits) to temp files and rename them in place
    (readers holding the old files finish on them); returns its row count."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    bits_tmp = target.with_name(f".{_bits_path(target).name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    bits_fd = os.open(bits_tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        rows = _append(fd, bits_fd, 0, kind, model, 0, dim)
        os.fsync(fd)
        os.fsync(bits_fd)
    finally:
        os.close(fd)
        os.close(bits_fd)
    # The two renames are not one step: without the meta, a crash between them leaves a
    # copy that is rebuilt, never old codes paired with new bits row for row.
    with contextlib.suppress(FileNotFoundError):
        _meta_path(target).unlink()
    os.replace(bits_tmp, _bits_path(target))
    os.replace(tmp, target)
    return rows


def _fresh(meta: dict[str, Any], model: str, dim: int, identity: str) -> bool:
    return (
        meta.get("model") == model
        and meta.get("dim") == dim
        and meta.get("source") == identity
        and meta.get("bits") == BITS_FORMAT
    )


def sync(kind: Kind, model: str, dim: int, *, wait: bool = True) -> dict[str, Any] | None:
    """Bring `kind`'s copy up to date with `memory_embedding`; returns its meta (`rows`:
    how many records of the file are valid). The usual search costs one read of the
    generation row and of the small meta file.

    `wait=False` (a search): what takes seconds (a first build, a rebuild, a large append
    after an import) is started in a background thread instead, and the answer is the copy
    as it stands (rows deleted since are dropped by the exact re-scoring, rows added since
    are missing until the build is done), or None when there is no copy yet."""
    target = path(kind)
    generation = index.current_generation()
    identity = vec0._source_identity()
    meta = _read_meta(target)
    whole = _fresh(meta, model, dim, identity) and _complete(target, meta, dim)
    if whole and meta.get("generation") == generation:
        return meta
    count, max_id = index._signature(kind, model)
    if not wait and not _quick(meta if whole else {}, count, max_id) and not HUEY.immediate:
        _build_in_background(kind, model, dim, first=not whole)
        return meta if whole else None
    return _sync_locked(target, kind, model, dim, generation, identity, count, max_id)


def _record_size(dim: int) -> int:
    """`_dtype(dim).itemsize` (a packed record), without importing numpy: a search whose
    copy is current, and the sweep finding it so, need nothing more."""
    return 8 + 4 + dim


def _complete(target: Path, meta: dict[str, Any], dim: int) -> bool:
    """Both files hold every row their meta counts (a deleted or truncated file does not)."""
    rows = int(meta.get("rows", 0))
    try:
        return target.stat().st_size >= rows * _record_size(dim) and _bits_path(
            target
        ).stat().st_size >= rows * _bits_size(dim)
    except OSError:
        return False


def _quick(meta: dict[str, Any], count: int, max_id: int) -> bool:
    """Whether bringing a copy with this `meta` ({} for none) to (count, max_id) is quick
    enough for a search to wait: nothing to write, a small append, or a small first copy
    (a new store answers by meaning from its first search)."""
    if not meta:
        return count <= INLINE_APPEND
    known, newest = int(meta.get("count", -1)), int(meta.get("max_id", -1))
    if (known, newest) == (count, max_id):
        return True
    return max_id > newest and 0 <= count - known <= INLINE_APPEND


def _sync_locked(
    target: Path,
    kind: Kind,
    model: str,
    dim: int,
    generation: int,
    identity: str,
    count: int,
    max_id: int,
) -> dict[str, Any]:
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with _lock, locks.exclusive(target.with_suffix(".lock")):
        meta = _read_meta(target)  # again under the lock: another process may have synced
        whole = _fresh(meta, model, dim, identity) and _complete(target, meta, dim)
        if whole and (meta.get("count"), meta.get("max_id")) == (count, max_id):
            rows = int(meta["rows"])
        elif whole and max_id > int(meta["max_id"]):
            rows = int(meta["rows"])
            fd = os.open(target, os.O_WRONLY)
            bits_fd = os.open(_bits_path(target), os.O_WRONLY)
            try:
                os.ftruncate(fd, rows * _record_size(dim))  # bytes a crashed append left
                os.ftruncate(bits_fd, rows * _bits_size(dim))
                rows += _append(fd, bits_fd, rows, kind, model, int(meta["max_id"]), dim)
            finally:
                os.close(fd)
                os.close(bits_fd)
            if rows != count:  # rows were deleted or re-embedded as well
                rows = _rebuild(target, kind, model, dim)
        else:
            rows = _rebuild(target, kind, model, dim)
        meta = {
            "source": identity,
            "model": model,
            "dim": dim,
            "generation": generation,
            "count": count,
            "max_id": max_id,
            "rows": rows,
            "bits": BITS_FORMAT,
        }
        config.write_atomic(_meta_path(target), json.dumps(meta).encode())
    return meta


def building(kind: Kind) -> bool:
    """A background build of `kind`'s copy is under way in this process."""
    return str(path(kind)) in _building


def _build_in_background(kind: Kind, model: str, dim: int, *, first: bool) -> None:
    """Sync `kind`'s copy in a thread of its own (once at a time per copy); with `first`
    (there is no copy to answer from meanwhile) search by meaning is off until it is done."""
    key = str(path(kind))
    with _building_lock:
        if key in _building:
            return
        _building.add(key)
    if first:
        embeddings.set_unavailable(
            key,
            f"the on-disk copy of the {kind} vectors is being built in the background (a first "
            "search, an import or a model change), so search answers by keyword until it is "
            "ready",
        )

    def work() -> None:
        try:
            started = time.perf_counter()
            meta = sync(kind, model, dim)
            log.info(
                "vector copy of %s built in the background: %s rows in %.1f s",
                kind,
                f"{int(meta.get('rows', 0)):,}" if meta else 0,
                time.perf_counter() - started,
            )
        except Exception:
            log.exception("building the vector copy of %s failed", kind)
        finally:
            with _building_lock:
                _building.discard(key)
            embeddings.clear_unavailable(key)
            connection.close()  # this thread's own database connection

    threading.Thread(target=work, name="cmem-vector-copy", daemon=True).start()


def _chunks(target: Path, rows: int, dim: int) -> Iterator[np.ndarray]:
    """The copy's first `rows` records, CHUNK at a time, each read with one pread."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    dtype = _dtype(dim)
    fd = os.open(target, os.O_RDONLY)
    try:
        for start in range(0, rows, CHUNK):
            want = min(CHUNK, rows - start) * dtype.itemsize
            data = os.pread(fd, want, start * dtype.itemsize)
            usable = len(data) // dtype.itemsize  # short: a rebuild swapped a smaller file in
            if usable:
                yield np.frombuffer(data, dtype=dtype, count=usable)
            if usable * dtype.itemsize < want:
                return
    finally:
        os.close(fd)


def _hamming_nearest(target: Path, rows: int, query: np.ndarray, depth: int) -> np.ndarray:
    """The row numbers of the `depth` rows (of the first `rows`) whose sign bits are
    nearest the query's, BITS_CHUNK rows per pread."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    dim = int(query.shape[0])
    query_bits = _sign_bits(query[None, :])
    words = query_bits.shape[1]
    size = _bits_size(dim)
    best_rows = np.zeros(0, dtype=np.int64)
    best_distances = np.zeros(0, dtype=np.uint16)
    fd = os.open(_bits_path(target), os.O_RDONLY)
    try:
        for start in range(0, rows, BITS_CHUNK):
            want = min(BITS_CHUNK, rows - start)
            data = os.pread(fd, want * size, start * size)
            usable = len(data) // size  # short: a rebuild swapped a smaller file in
            if not usable:
                break
            chunk = np.frombuffer(data, dtype=np.uint64, count=usable * words)
            counts = _popcount(chunk.reshape(usable, words) ^ query_bits)
            # column by column: twice as fast as `sum(axis=1)` over six columns
            distances = counts[:, 0].astype(np.uint16)
            for word in range(1, words):
                distances += counts[:, word]
            found = np.arange(start, start + usable, dtype=np.int64)
            if len(best_rows) >= depth:  # only rows that can enter the best `depth`
                closer = distances <= best_distances.max()
                found, distances = found[closer], distances[closer]
            found = np.concatenate([best_rows, found])
            distances = np.concatenate([best_distances, distances])
            if len(distances) > depth:
                top = np.argpartition(distances, depth - 1)[:depth]
                found, distances = found[top], distances[top]
            best_rows, best_distances = found, distances
            if usable < want:
                break
    finally:
        os.close(fd)
    return np.sort(best_rows)


def _popcount(words: np.ndarray) -> np.ndarray:
    """Set bits per element (numpy >= 2 has it built in; older ones count bytes)."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(words)  # type: ignore[no-any-return]
    return _popcount_by_bytes(words)


def _popcount_by_bytes(words: np.ndarray) -> np.ndarray:
    """Set bits per uint64, from a table of the 256 bytes' counts (numpy < 2)."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    as_bytes = words.view(np.uint8).reshape(*words.shape, 8)
    return _byte_popcount()[as_bytes].sum(axis=-1, dtype=np.uint8)  # type: ignore[no-any-return]


@functools.cache
def _byte_popcount() -> np.ndarray:
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    return np.array([bin(byte).count("1") for byte in range(256)], dtype=np.uint8)


def _best_of_rows(target: Path, rows: np.ndarray, query: np.ndarray, depth: int) -> list[int]:
    """The object ids of the `depth` best of these rows (sorted row numbers) for `query`,
    their codes read one pread per row."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    dim = int(query.shape[0])
    dtype = _dtype(dim)
    record = dtype.itemsize
    fd = os.open(target, os.O_RDONLY)
    try:
        reads = (os.pread(fd, record, int(row) * record) for row in rows)
        # a short read: a rebuild swapped a smaller file in (its rows are dropped)
        data = b"".join(part for part in reads if len(part) == record)
    finally:
        os.close(fd)
    records = np.frombuffer(data, dtype=dtype, count=len(data) // record)
    scores = (records["codes"].astype(np.float32) @ query) * records["scale"]
    if len(scores) > depth:
        top = np.argpartition(-scores, depth - 1)[:depth]
        return [int(pk) for pk in records["oid"][top]]
    return [int(pk) for pk in records["oid"]]


def candidates(
    kind: Kind, model: str, query: np.ndarray, depth: int, allowed: set[int] | None = None
) -> list[int]:
    """The object ids of the copy's `depth` best rows for `query` (approximate scores),
    among `allowed` when given."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    dim = int(query.shape[0])
    meta = sync(kind, model, dim, wait=False)
    if meta is None:  # being built (`embeddings.unavailable_note` says so meanwhile)
        return []
    rows = int(meta.get("rows", 0))
    if not rows:
        return []
    q = query.astype(np.float32)
    if allowed is None and rows >= COARSE_FROM:
        depth_read = min(max(OVERSAMPLE * depth, COARSE_FLOOR), COARSE_CEILING)
        if depth_read < rows:
            near = _hamming_nearest(path(kind), rows, q, depth_read)
            return _best_of_rows(path(kind), near, q, depth)
    keep = np.fromiter(allowed, dtype=np.int64, count=len(allowed)) if allowed is not None else None
    best_ids = np.zeros(0, dtype=np.int64)
    best_scores = np.zeros(0, dtype=np.float32)
    widened = np.empty((min(CHUNK, rows), dim), dtype=np.float32)  # one block per search
    for chunk in _chunks(path(kind), rows, dim):
        ids = chunk["oid"]
        block = widened[: len(chunk)]
        np.copyto(block, chunk["codes"], casting="unsafe")
        scores = (block @ q) * chunk["scale"]
        if keep is not None:
            mask = np.isin(ids, keep)
            ids, scores = ids[mask], scores[mask]
        ids = np.concatenate([best_ids, ids])
        scores = np.concatenate([best_scores, scores])
        if len(scores) > depth:
            top = np.argpartition(-scores, depth - 1)[:depth]
            ids, scores = ids[top], scores[top]
        best_ids, best_scores = ids, scores
    return [int(pk) for pk in best_ids]


def nearest(
    kind: Kind,
    model: str,
    query: np.ndarray,
    *,
    k: int,
    allowed: set[int] | None = None,
    min_score: float = 0.0,
) -> list[tuple[float, int]]:
    """`index.nearest`'s contract: the `k` rows most similar to `query`, best first, as
    (cosine, id), scored exactly as the scan scores them; `allowed` restricts to those ids."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    if k <= 0 or (allowed is not None and not allowed):
        return []
    if allowed is not None and len(allowed) <= DIRECT:
        ids = sorted(allowed)
    else:
        ids = candidates(kind, model, query, k + MARGIN, allowed)
    found, vectors = index.live_vectors(kind, model, ids)
    if not len(found):
        return []
    scores = vectors @ query.astype(np.float32)
    order = np.argsort(-scores, kind="stable")[:k]
    return [(float(scores[i]), int(found[i])) for i in order if scores[i] > min_score]


def drop(kind: Kind) -> None:
    """Forget `kind`'s copy (tests, and a store that changes path)."""
    target = path(kind)
    for stale in (target, _bits_path(target), _meta_path(target), target.with_suffix(".lock")):
        with contextlib.suppress(OSError):
            stale.unlink()


def clear() -> None:
    """Delete every kind's copy of this database (tests: a rolled-back test leaves the
    generation counter where the next test's rows will bring it again)."""
    for kind in TABLES:
        drop(kind)
