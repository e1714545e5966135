"""`python -m tests.bench recall_pg`: hybrid search on PostgreSQL at size, on pgvector and on its fallback.

Each path gets a scratch database of its own:
- `fallback`: on the server of CMEM_BENCH_PG_URL (here Debian's PostgreSQL 15, which has no
  pgvector): vectors as float16 blobs, the newest 100k scanned in memory plus the keyword
  candidates (`search/postgres.py`);
- `pgvector`: on a `pgserver` PostgreSQL 16 with pgvector 0.6 started for the run (the dev
  extra has it): `vector(256)` with one HNSW index per kind.

1. `cmem migrate` (which detects pgvector, or not);
2. seed N observations in bulk (`scale.child_seed`: COPY, GIN index built after) and one
   random unit vector each by COPY (scan and index cost do not depend on the values); on
   pgvector the HNSW indexes are dropped first and built after, as a bulk import would;
3. in a child on that database: keyword, semantic and hybrid searches interleaved query by
   query over the recall set's texts: p50, p99, and the load average then.

Sizes: `--size N` for every path; else fallback at 100,000 and 1,000,000, pgvector at
100,000. `--quick`: 20,000 each. `--runs`: searches per query (default 5).
CMEM_BENCH_PATHS=fallback,pgvector picks the paths (default both).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from tests.bench.harness import (
    child_env,
    child_json,
    child_main,
    django_setup,
    migrated_and_seeded,
    percentile,
    scratch_dir,
)

_CHUNK = 10_000


def child_seed(size: int, project_dir: str) -> dict[str, Any]:
    from tests.bench.scale import child_seed as seed_observations

    seeded = seed_observations(size, project_dir)
    return {**seeded, **seed_random_vectors()}


def seed_random_vectors(*, maintenance_mem: str = "1GB", parallel: int = 0) -> dict[str, Any]:
    """Random unit vectors for every observation that has none, by COPY, then the HNSW indexes (pgvector)
    built over them once (`maintenance_mem`, `parallel` workers): this measures cost, not
    quality, and embedding 1M rows would take hours."""
    began = time.perf_counter()
    import numpy as np
    from django.db import connection
    from django.utils import timezone

    from memory.retrieval.embeddings import KINDS, pgvector
    from memory.retrieval.embeddings.model import get_model

    model = get_model()
    ready = pgvector.ready()
    rng = np.random.default_rng(18)
    now = timezone.now()
    with connection.cursor() as cursor:
        if ready:
            for kind in KINDS:
                cursor.execute(f"DROP INDEX IF EXISTS embedding_{kind}_hnsw")
        # The scale seed (tests/bench/scale_seed.py) gives rows vectors where numpy is here.
        cursor.execute(
            "SELECT o.id FROM memory_observation o WHERE NOT EXISTS (SELECT 1 FROM "
            "memory_embedding e WHERE e.kind = 'observation' AND e.object_id = o.id) ORDER BY o.id"
        )
        ids = [row[0] for row in cursor.fetchall()]
    columns = "kind, object_id, model, vector, created" + (", embedding" if ready else "")
    raw = connection.connection
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        vectors = rng.standard_normal((len(chunk), model.dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        halves = vectors.astype(np.float16)
        with (
            raw.cursor() as pgcur,
            pgcur.copy(f"COPY memory_embedding ({columns}) FROM STDIN") as copy,
        ):
            for pk, half in zip(chunk, halves, strict=True):
                row: tuple[Any, ...] = ("observation", pk, model.version, half.tobytes(), now)
                if ready:
                    row += (pgvector.literal(half.astype(np.float32)),)
                copy.write_row(row)
    vectors_s = time.perf_counter() - began
    with connection.cursor() as cursor:
        if ready:
            cursor.execute(f"SET maintenance_work_mem = '{maintenance_mem}'")
            if parallel:
                cursor.execute(f"SET max_parallel_maintenance_workers = {int(parallel)}")
            pgvector.install(connection)  # builds the HNSW indexes over what is there
        cursor.execute("ANALYZE memory_embedding")
    return {
        "vectors_s": vectors_s,
        "index_s": time.perf_counter() - began - vectors_s,
        "pgvector": ready,
    }


def child_measure(runs: int, project_dir: str) -> dict[str, Any]:
    django_setup()
    from memory.retrieval.embeddings import pgvector
    from memory.retrieval.search.query import Mode, SearchQuery
    from memory.retrieval.search.service import search
    from tests.bench.recall import load_set

    queries = load_set()["queries"]
    texts = [q["text"] for q in queries][:: max(1, len(queries) // 60)]
    modes: tuple[Mode, ...] = ("keyword", "semantic", "hybrid")
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    for text in texts:
        for mode in modes:
            search(SearchQuery(text=text, mode=mode))  # caches, the fallback's matrix
        for _ in range(runs):
            for mode in modes:
                began = time.perf_counter()
                search(SearchQuery(text=text, mode=mode))
                times[mode].append((time.perf_counter() - began) * 1000)
    out: dict[str, Any] = {"pgvector": pgvector.ready(), "load": os.getloadavg()[0]}
    for mode in modes:
        out[f"{mode}_p50"] = percentile(times[mode], 0.5)
        out[f"{mode}_p99"] = percentile(times[mode], 0.99)
    return out


def _bench(path: str, size: int, runs: int, out: Any) -> dict[str, Any]:
    from tests.bench.scale import PG_URL, _pg_admin

    with scratch_dir(f"cmem-recall-pg-{path}-") as work:
        os.chmod(work, 0o755)  # pgserver's own user reaches its data folder inside
        (work / "project").mkdir()
        name = f"cmem_recall_{path}_{os.getpid()}"
        server: Any = None
        try:
            if path == "pgvector":
                import pgserver

                server = pgserver.get_server(str(work / "pg"), cleanup_mode="stop")
                socket = str(server.get_uri()).split("host=", 1)[1]
                server.psql(f'CREATE DATABASE "{name}";')
                url = f"postgresql://postgres@/{name}?host={socket}"
            else:
                _pg_admin(f'CREATE DATABASE "{name}"')
                url = f"{PG_URL}/{name}"
            env = child_env(
                work / "data",
                CLAUDE_MEM_DATABASE_URL=url,
                CLAUDE_MEM_COMPRESSOR="offline",
                DJANGO_SETTINGS_MODULE="cmem_site.settings",
            )
            out.write(f"{path}: seeding {size:,} observations with vectors…")
            module = "tests.bench.recall_pg"
            seeded = migrated_and_seeded(module, env, size, work / "project", timeout=7200)
            measured = child_json(module, env, "measure", str(runs), str(work / "project"))
            return {"path": path, "size": size, **seeded, **measured}
        finally:
            if server is not None:
                server.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE);')
                server.cleanup()
            elif path == "fallback":
                _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run(*, out: Any, options: dict[str, Any]) -> None:
    paths = [p.strip() for p in os.environ.get("CMEM_BENCH_PATHS", "fallback,pgvector").split(",")]
    runs = options.get("runs") or 5
    plan: list[tuple[str, int]] = []
    for path in paths:
        if options.get("size"):
            sizes = [int(options["size"])]
        elif options.get("quick"):
            sizes = [20_000]
        else:
            sizes = [100_000, 1_000_000] if path == "fallback" else [100_000]
        plan += [(path, size) for size in sizes]
    out.write(
        "| path | observations | keyword p50 | keyword p99 | semantic p50 | semantic p99 "
        "| hybrid p50 | hybrid p99 | seed (s) | vectors + index (s) | load |"
    )
    out.write("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for path, size in plan:
        r = _bench(path, size, runs, out)
        if (path == "pgvector") != bool(r["pgvector"]):
            out.write(f"{path}: the database took the other path (pgvector={r['pgvector']})")
        out.write(
            f"| {path} | {size:,} | {r['keyword_p50']:.1f} ms | {r['keyword_p99']:.1f} ms "
            f"| {r['semantic_p50']:.1f} ms | {r['semantic_p99']:.1f} ms "
            f"| {r['hybrid_p50']:.1f} ms | {r['hybrid_p99']:.1f} ms "
            f"| {r['seed_s']:.0f} | {r['vectors_s'] + r['index_s']:.0f} | {r['load']:.1f} |"
        )
        sys.stdout.flush()


if __name__ == "__main__":
    child_main(seed=child_seed, measure=child_measure)
