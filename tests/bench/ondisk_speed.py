"""`python -m tests.bench ondisk_speed [--size N] [--runs N]`: CPU per query of the on-disk
int8 copy (`ondisk.nearest`), its whole scan against the coarse pass over the sign bits.

In a child process on a temporary data dir (never yours): unit vectors are written to
`memory_embedding` in bulk up to each size (default 10k, 100k and 1M; `--size` one), in
two shapes: uniformly random (no structure: the worst case for sign bits, whose nearest
rows are barely nearer than any other) and clustered (2,000 centres plus 0.6 of noise,
as the store's recall tests make them: near rows are close calls, but there is structure,
as in real embeddings). The copy is built, then each query (a stored vector plus noise, so
that it has true neighbours) is answered both ways, interleaved, timed in thread CPU time.
Printed: the medians, and recall@60 (the depth hybrid search asks) of the coarse pass
against the whole scan.
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

from tests.bench.harness import is_bench_child, rerun_in_fresh_data_dir

MODEL = "synthetic@0"
DIM = 384
SIZES = (10_000, 100_000, 1_000_000)
# Rows asked per kind: what hybrid search asks (`hybrid.RRF_K`).
K = 60


def _unit(rng: Any, count: int) -> Any:
    import numpy as np

    vectors = rng.standard_normal((count, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _fill(kind: str, total: int) -> None:
    """Unit vectors (float16, as stored) up to `total` rows of `kind`, bulk inserted:
    random ones as observations, clustered ones as summaries."""
    import numpy as np
    from django.db import connection, transaction

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM memory_embedding WHERE kind = %s", [kind])
        have = int(cursor.fetchone()[0])
    rng = np.random.default_rng(have)
    centres = _unit(np.random.default_rng(33), 2000)
    for begin in range(have, total, 20_000):
        count = min(20_000, total - begin)
        vectors = _unit(rng, count)
        if kind == "summary":
            vectors = centres[rng.integers(0, len(centres), count)] + 0.6 * vectors
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        blobs = vectors.astype(np.float16)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO memory_embedding (kind, object_id, model, vector, created) "
                "VALUES (%s, %s, %s, %s, '2024-01-01')",
                [(kind, begin + i + 1, MODEL, blobs[i].tobytes()) for i in range(count)],
            )


def _child(sizes: list[int], runs: int) -> None:
    import numpy as np
    from django.core.management import call_command

    from memory.retrieval.embeddings import index, ondisk

    call_command("migrate", verbosity=0)
    print(f"numpy {np.__version__}; load {os.getloadavg()[0]:.1f}")
    print(
        "| vectors | shape | whole scan CPU p50 | coarse pass CPU p50 | recall@60 coarse vs whole |"
    )
    print("|---:|---|---:|---:|---:|")
    rng = np.random.default_rng(33)
    for size, kind in ((size, kind) for size in sizes for kind in ("observation", "summary")):
        _fill(kind, size)
        ondisk.sync(kind, MODEL, DIM)
        picks = rng.integers(1, size + 1, runs)
        found, _ = index.live_vectors(kind, MODEL, [int(p) for p in picks])
        _, stored = index.live_vectors(kind, MODEL, [int(p) for p in found])
        queries = stored + 0.05 * rng.standard_normal(stored.shape).astype(np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        cpu: dict[str, list[float]] = {"whole": [], "coarse": []}
        hits = total = 0
        for query in queries:
            answers = {}
            for way, threshold in (("whole", 1 << 62), ("coarse", 0)):
                ondisk.COARSE_FROM = threshold
                began = time.thread_time()
                answers[way] = ondisk.nearest(kind, MODEL, query, k=K)
                cpu[way].append((time.thread_time() - began) * 1000)
            whole = {pk for _, pk in answers["whole"]}
            hits += len(whole & {pk for _, pk in answers["coarse"]})
            total += len(whole)
        print(
            f"| {size:,} | {'random' if kind == 'observation' else 'clustered'} "
            f"| {statistics.median(cpu['whole']):.2f} ms "
            f"| {statistics.median(cpu['coarse']):.2f} ms | {hits / max(total, 1):.3f} |"
        )
    print(f"load after: {os.getloadavg()[0]:.1f}")


def run(*, out: Any, options: dict[str, Any]) -> None:
    runs = options.get("runs") or 30
    if is_bench_child("ondisk_speed"):
        _child([int(options["size"])] if options.get("size") else list(SIZES), runs)
        return
    rerun_in_fresh_data_dir("ondisk_speed", options, runs)
