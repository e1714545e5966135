"""`python -m tests.bench pg_search`: team-mode search on PostgreSQL + pgvector at size, per owner.

One scratch database on a `pgserver` PostgreSQL 16 with pgvector started for the run (the
dev extra has it; this machine's Debian PostgreSQL has no pgvector):

1. `cmem migrate`, then N observations seeded in bulk (`scale.child_seed`: COPY, GIN built
   after), their sessions handed to a team: four users with ~24% of the rows each and one
   with 4% (a newcomer, whose scope is selective), and one random unit vector per row by
   COPY (search cost does not depend on the values: this measures cost, not quality), the
   HNSW indexes built after, as a bulk import would;
2. in a child on that database, as each of two users (the 24% one and the 4% one, through
   `viewer_scope`, exactly as a teammate's token scopes a request): keyword, semantic and
   hybrid searches, interleaved query by query: p50 and p99 per mode and user, and the
   load average then.

`--size N` (default 1,000,000; `--quick`: 20,000), `--runs` searches per query (default 5).
`--keep DIR` keeps the server and its database in DIR after the run (and reuses them
when DIR already holds one seeded at that size), so the query plans in docs/design/
postgres-at-scale.md can be read on the very database measured.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from tests.bench.harness import (
    child_env,
    child_json,
    child_main,
    cmem_migrate,
    django_setup,
    percentile,
    scratch_dir,
)

# Session i belongs to the newcomer when i % NEWCOMER_EVERY == 0, else to team member i % 4.
NEWCOMER_EVERY = 25
TEAM = ("ana", "bo", "cy", "di")
NEWCOMER = "newcomer"
# Keyword queries of the scale bench's vocabulary (common, rare, phrase, prefix, any-word)
# and questions that hold no seeded word at all (the any-word fallback, then nothing).
QUERIES = [
    "cache",
    "session token",
    "redis queue timeout",
    "postgres schema migration",
    "middleware auth",
    "compr*",
    '"retry lock"',
    "deploy rollback",
    "how does the gate decide on a cached file",
    "cache -redis",
]


def child_seed(size: int, project_dir: str) -> dict[str, Any]:
    # Importing these sets Django up (scale.child_seed does) before any model is touched.
    from tests.bench.recall_pg import seed_random_vectors
    from tests.bench.scale import child_seed as seed_observations

    seeded = seed_observations(size, project_dir)
    from django.contrib.auth import get_user_model
    from django.db import connection

    users = {name: get_user_model().objects.create_user(name).pk for name in (*TEAM, NEWCOMER)}
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memory_session SET owner_id = CASE WHEN id %% %s = 0 THEN %s "
            "ELSE (ARRAY[%s, %s, %s, %s])[id %% 4 + 1] END",
            [NEWCOMER_EVERY, users[NEWCOMER], *(users[n] for n in TEAM)],
        )
        cursor.execute("ANALYZE memory_session")
    # The graph of 1M 384-d vectors is ~2 GB: built in memory, it takes minutes; once it
    # spills, hours.
    vectors = seed_random_vectors(maintenance_mem="4GB", parallel=2)
    return {
        **seeded,
        "users": users,
        **vectors,
    }


def child_measure(runs: int, project_dir: str) -> dict[str, Any]:
    django_setup()
    from django.contrib.auth import get_user_model

    from memory.retrieval.embeddings import pgvector
    from memory.retrieval.search.query import Mode, SearchQuery
    from memory.retrieval.search.service import search
    from memory.team.scope import viewer_scope

    modes: tuple[Mode, ...] = ("keyword", "semantic", "hybrid")
    out: dict[str, Any] = {"pgvector": pgvector.ready()}
    for name in (TEAM[0], NEWCOMER):
        user_id = get_user_model().objects.get(username=name).pk
        times: dict[str, list[float]] = {mode: [] for mode in modes}
        with viewer_scope(user_id=user_id, staff=False):
            for text in QUERIES:
                for mode in modes:
                    search(SearchQuery(text=text, mode=mode))  # the model, the caches
                for _ in range(runs):
                    for mode in modes:
                        began = time.perf_counter()
                        search(SearchQuery(text=text, mode=mode))
                        times[mode].append((time.perf_counter() - began) * 1000)
        for mode in modes:
            out[f"{name}_{mode}_p50"] = percentile(times[mode], 0.5)
            out[f"{name}_{mode}_p99"] = percentile(times[mode], 0.99)
    out["load"] = os.getloadavg()[0]
    return out


def _server(folder: Path, *, keep: bool) -> Any:
    # The dev extra's PostgreSQL with pgvector; kept running for --keep, else stopped by
    # `cleanup()`.
    import pgserver

    return pgserver.get_server(str(folder), cleanup_mode=None if keep else "stop")


def run(*, out: Any, options: dict[str, Any]) -> None:
    size = int(options.get("size") or (20_000 if options.get("quick") else 1_000_000))
    runs = int(options.get("runs") or 5)
    keep = options.get("keep")
    with scratch_dir("cmem-pg-search-") as scratch:
        work = Path(keep) if keep else scratch
        work.mkdir(parents=True, exist_ok=True)
        os.chmod(work, 0o755)  # pgserver's own user reaches its data folder inside
        (work / "project").mkdir(exist_ok=True)
        name = f"cmem_pg_search_{size}"
        server = _server(work / "pg", keep=bool(keep))
        try:
            socket = str(server.get_uri()).split("host=", 1)[1]
            url = f"postgresql://postgres@/{name}?host={socket}"
            env = child_env(
                work / "data",
                CLAUDE_MEM_DATABASE_URL=url,
                CLAUDE_MEM_COMPRESSOR="offline",
                DJANGO_SETTINGS_MODULE="cmem_site.settings",
            )
            seeded_flag = work / f"seeded-{size}"
            if not (keep and seeded_flag.exists()):
                server.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE);')
                server.psql(f'CREATE DATABASE "{name}";')
                out.write(f"seeding {size:,} observations with vectors…")
                cmem_migrate(env)
                module = "tests.bench.pg_search"
                seeded = child_json(
                    module, env, "seed", str(size), str(work / "project"), timeout=7200
                )
                seeded_flag.write_text(str(seeded))
                out.write(
                    f"seeded in {seeded['seed_s']:.0f} s, vectors {seeded['vectors_s']:.0f} s, "
                    f"HNSW {seeded['index_s']:.0f} s"
                )
            else:
                cmem_migrate(env)
            r = child_json(
                "tests.bench.pg_search", env, "measure", str(runs), str(work / "project")
            )
        finally:
            if not keep:
                server.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE);')
                server.cleanup()
    out.write(f"pgvector: {r['pgvector']}, load average {r['load']:.2f}")
    out.write("| viewer (share of rows) | mode | p50 (ms) | p99 (ms) |")
    out.write("|---|---|---:|---:|")
    for user, share in ((TEAM[0], "24%"), (NEWCOMER, "4%")):
        for mode in ("keyword", "semantic", "hybrid"):
            out.write(
                f"| {user} ({share}) | {mode} | {r[f'{user}_{mode}_p50']:.1f} "
                f"| {r[f'{user}_{mode}_p99']:.1f} |"
            )
    sys.stdout.flush()


if __name__ == "__main__":
    child_main(seed=child_seed, measure=child_measure)
