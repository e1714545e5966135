"""Which nearest-rows index serves a SQLite search: the int8 copy on disk, the in-heap scan,
or sqlite-vec.

`CLAUDE_MEM_VECTOR_INDEX`: `disk` (`ondisk.py`: an int8 copy read in bounded chunks, the
candidates re-scored exactly; memory flat in the row count), `scan` (`index.py`: one
float32 matrix per kind in the process's heap, one matrix product), `sqlite-vec`
(`vec0.py`: a derived vec0 file), or `auto` (the default): sqlite-vec only where this
interpreter can load it AND it measures faster than the disk copy on this store, else the
disk copy. Many Pythons cannot load extensions at all (built without
`enable_load_extension`); sqlite-vec asked for where it cannot load is logged (once) and
shown by `cmem doctor`, and the disk copy answers.

`auto` times both paths on the live store the first time a kind is searched (in a
background thread, the disk copy answering meanwhile; a few queries made of stored
vectors, after one warm-up each), keeps the faster, logs which and why, and
records it in the data dir (`state/vector-index.json`), so the other processes and later
runs reuse it; it measures again when the kind has grown `REMEASURE_GROWTH`-fold. When the
disk copy wins, the vec0 copy is dropped (nothing on disk to keep in step). A `scan` recorded
by an earlier version reads as `disk`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sqlite3
import statistics
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from django.db import connection
from huey.contrib.djhuey import HUEY

from memory import config
from memory.retrieval.embeddings import KINDS, Kind, index, ondisk, vec0
from memory.retrieval.embeddings.model import model_version

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

SETTING = "CLAUDE_MEM_VECTOR_INDEX"
Choice = Literal["disk", "scan", "sqlite-vec"]
CHOICES = ("auto", "disk", "scan", "sqlite-vec")
# Queries timed per path when `auto` decides, and the depth each asks (hybrid's CANDIDATES).
QUERIES = 5
DEPTH = 50
# `auto` measures again once a kind holds this many times the vectors it was measured at
# (and at least MIN_REMEASURE): which path wins depends on the store's size.
REMEASURE_GROWTH = 4
MIN_REMEASURE = 1000


@dataclass
class Decision:
    choice: Choice
    why: str
    count: int
    generation: int = -1


_lock = threading.Lock()
_decided: dict[tuple[str, Kind, str], Decision] = {}  # (copy's file, kind, model)
_logged: set[str] = set()
_measuring: set[tuple[str, Kind, str]] = set()  # keys a background thread is measuring


def configured() -> str:
    raw = config.get(SETTING).strip().lower()
    if raw in CHOICES:
        return raw
    _log_once(f"{SETTING}={raw!r} is not one of {', '.join(CHOICES)}; using auto")
    return "auto"


def _log_once(message: str, level: int = logging.WARNING) -> None:
    if message not in _logged:
        _logged.add(message)
        log.log(level, "vector index: %s", message)


def state_path() -> Any:
    return config.data_dir() / "state" / "vector-index.json"


def recorded() -> dict[str, Any]:
    """What `auto` decided for this database, per kind (doctor and status read it)."""
    try:
        data = json.loads(state_path().read_text())
    except (OSError, ValueError):
        return {}
    entry = data.get(vec0.source_key()) if isinstance(data, dict) else None
    return entry if isinstance(entry, dict) else {}


def _record(kind: Kind, model: str, decision: Decision, figures: dict[str, float]) -> None:
    path = state_path()
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(path.read_text()) if path.exists() else {}
        entry = data.setdefault(vec0.source_key(), {})
        entry[kind] = {
            "model": model,
            "choice": decision.choice,
            "why": decision.why,
            "count": decision.count,
            **figures,
        }
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        config.write_atomic(path, json.dumps(data, indent=1).encode())


def choice(kind: Kind, model: str, dim: int) -> Choice:
    """The path that serves `kind` now (see the module docstring)."""
    setting = configured()
    if setting in ("scan", "disk"):
        return "disk" if setting == "disk" else "scan"
    reason = vec0.unavailable_reason()
    if reason:
        if setting == "sqlite-vec":
            _log_once(f"{SETTING}=sqlite-vec, but {reason}; searching with the disk copy")
        return "disk"
    if setting == "sqlite-vec":
        return "sqlite-vec"
    key = (str(vec0.path()), kind, model)
    generation = index.current_generation()
    decision = _decided.get(key)
    if decision and decision.generation == generation:
        return decision.choice
    count, _ = index._signature(kind, model)
    if decision is None:
        saved = recorded().get(kind)
        if isinstance(saved, dict) and saved.get("model") == model:
            chosen: Choice = "sqlite-vec" if saved["choice"] == "sqlite-vec" else "disk"
            decision = Decision(chosen, saved.get("why", ""), int(saved["count"]))
    if decision is not None and not _grown(decision.count, count):
        decision.generation = generation
        _decided[key] = decision
        return decision.choice
    measured = _start_measuring(key, kind, model, dim, count, generation)
    if measured is not None:
        return measured.choice
    return decision.choice if decision is not None else "disk"  # until the measure is in


def _start_measuring(
    key: tuple[str, Kind, str], kind: Kind, model: str, dim: int, count: int, generation: int
) -> Decision | None:
    """Measure in a background thread, so no search waits for it (building the copy of
    100k vectors took 3.7 s here, and a hook's request has 2 s): the disk copy answers until the
    decision is in. Where background work runs inline (`HUEY.immediate`: the tests), it is
    measured now and returned."""

    def work() -> Decision:
        with _lock:
            decision = _measure(kind, model, dim, count)
            decision.generation = generation
            _decided[key] = decision
            return decision

    if HUEY.immediate:
        return work()
    if key in _measuring:
        return None
    _measuring.add(key)

    def background() -> None:
        try:
            work()
        except Exception as exc:  # noqa: BLE001 - a failed measure keeps the disk copy, and says why
            _log_once(f"measuring the indexes failed ({exc}); searching with the disk copy")
        finally:
            _measuring.discard(key)
            connection.close()  # this thread's own database connection

    threading.Thread(target=background, name="cmem-vector-index", daemon=True).start()
    return None


def _grown(measured_at: int, count: int) -> bool:
    if measured_at == 0:
        return count > 0
    return count >= MIN_REMEASURE and count >= measured_at * REMEASURE_GROWTH


def _median_ms(run: Any, queries: np.ndarray) -> float:
    run(queries[0])  # warm-up: the first query pays for page cache and allocations
    times = []
    for query in queries:
        start = time.perf_counter()
        run(query)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _measure(kind: Kind, model: str, dim: int, count: int) -> Decision:
    """Time both paths on the live store; keep the faster."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    sample, stored = index.null_sample(kind, model, dim)
    if not stored or not len(sample):
        return Decision("disk", "no vectors stored yet", 0)
    picks = np.linspace(0, len(sample) - 1, num=min(QUERIES, len(sample))).astype(int)
    queries = sample[picks] / np.linalg.norm(sample[picks], axis=1, keepdims=True)
    try:
        start = time.perf_counter()
        vec0.sync(kind, model, dim)
        build_s = time.perf_counter() - start
        vec_ms = _median_ms(lambda q: vec0.nearest(kind, model, q, k=DEPTH), queries)
    except sqlite3.Error as exc:
        why = f"sqlite-vec failed on this store ({exc})"
        _log_once(why)
        return Decision("disk", why, count)
    ondisk.sync(kind, model, dim)  # built first, as vec0's is: neither is timed building
    disk_ms = _median_ms(lambda q: ondisk.nearest(kind, model, q, k=DEPTH), queries)
    faster: Choice = "sqlite-vec" if vec_ms < disk_ms else "disk"
    why = (
        f"{faster} measured faster over {count:,} {kind} vectors: disk {disk_ms:.2f} ms, "
        f"sqlite-vec {vec_ms:.2f} ms (median of {len(queries)} queries, depth {DEPTH})"
    )
    decision = Decision(faster, why, count)
    if faster == "disk":
        with contextlib.suppress(sqlite3.Error):
            vec0.drop(kind)
    log.info("vector index for %s: %s", kind, why)
    _record(kind, model, decision, {"disk_ms": disk_ms, "vec_ms": vec_ms, "build_s": build_s})
    return decision


def nearest(
    kind: Kind,
    model: str,
    query: np.ndarray,
    *,
    k: int,
    allowed: set[int] | None = None,
    min_score: float = 0.0,
) -> list[tuple[float, int]]:
    """`index.nearest`'s contract, answered by the chosen path. A depth beyond what
    sqlite-vec answers in one query, or an error from it, falls back to the disk copy."""
    dim = int(query.shape[0])
    chosen = choice(kind, model, dim)
    if chosen == "sqlite-vec" and k + vec0.MARGIN <= vec0.MAX_K:
        try:
            return vec0.nearest(kind, model, query, k=k, allowed=allowed, min_score=min_score)
        except sqlite3.Error as exc:
            _log_once(f"sqlite-vec failed ({exc}); searching with the disk copy")
    if chosen == "scan":
        return index.nearest(kind, model, query, k=k, allowed=allowed, min_score=min_score)
    return ondisk.nearest(kind, model, query, k=k, allowed=allowed, min_score=min_score)


def prepare_copies(kinds: tuple[Kind, ...] = KINDS) -> int:
    """Bring the copies of `kinds` up to date with the configured model's vectors, off the
    request path (the minute sweep); returns the rows they hold. Only where the disk copy
    serves (`choice`), and only a copy that exists: the first is built in the background
    by the first search that needs it, so that a worker nobody searches never loads numpy
    for it (its idle memory stays what it was). A current copy costs two small reads."""
    model = model_version()
    rows = 0
    for kind in kinds:
        if not ondisk.path(kind).exists():
            continue
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT length(vector) FROM memory_embedding WHERE kind = %s AND model = %s "
                "LIMIT 1",
                [kind, model],
            )
            found = cursor.fetchone()
        if found is None:
            continue
        dim = int(found[0]) // 2  # float16 blobs
        if choice(kind, model, dim) == "disk":
            meta = ondisk.sync(kind, model, dim)
            rows += int(meta.get("rows", 0)) if meta else 0
    return rows


def describe() -> tuple[str, str]:
    """(level, one line) for `cmem doctor`: the setting, whether sqlite-vec loads here,
    and what `auto` chose."""
    setting = configured()
    reason = vec0.unavailable_reason()
    if setting in ("scan", "disk"):
        return "ok", f"vector index: {setting} ({SETTING}={setting})"
    if reason:
        level = "warn" if setting == "sqlite-vec" else "ok"
        return level, f"vector index: disk ({SETTING}={setting}, but {reason})"
    if setting == "sqlite-vec":
        return "ok", "vector index: sqlite-vec (CLAUDE_MEM_VECTOR_INDEX=sqlite-vec)"
    decided = {kind: entry.get("choice") for kind, entry in recorded().items()}
    if not decided:
        return "ok", "vector index: auto, sqlite-vec loads here; not measured yet (first search)"
    chosen = ", ".join(f"{kind} {what}" for kind, what in decided.items())
    return "ok", f"vector index: auto, measured on this store: {chosen}"


def clear() -> None:
    """Forget this process's decisions (tests)."""
    with _lock:
        _decided.clear()
