"""`python -m tests.bench scale`: team mode at size. PostgreSQL at 1M observations, SQLite beside it.

For each backend, in a database of its own (PostgreSQL: a scratch database on the server
of CMEM_BENCH_PG_URL; SQLite: a temporary data dir):

1. `cmem migrate`, then seed N observations (+ one ObservationFile each, ~1 session per
   1000) in bulk: COPY on PostgreSQL with the GIN index built after, one executemany
   transaction on SQLite (FTS5 triggers fire per row, as in real use).
2. Measure in a child process on that database: search p50/p99 through
   `memory.retrieval.search.service.search` over a fixed mix of queries, and gate p50 through
   `memory.briefing.gate.gate_decide` (first Read of a file with history in a new session).
3. Start a real worker (`cmem serve`; PostgreSQL + Redis queue, or the SQLite default) and
   post observation hooks from 16 concurrent HTTP clients: ingest throughput and latency.

Sizes: `--size` (PostgreSQL, default 1,000,000); SQLite gets min(size, 200,000), the
largest it handles comfortably here. `--quick`: 20,000 / 10,000. `--runs`: searches per query.


Over ~500 lines on purpose: seeding, measuring and reporting one scenario read best together."""

from __future__ import annotations

import json
import os
import random
import threading
import time
import urllib.request
import uuid
from datetime import timedelta
from typing import Any

from tests.bench.harness import (
    child_env,
    child_json,
    child_main,
    django_setup,
    free_port,
    migrated_and_seeded,
    owner_headers,
    percentile,
    running_worker,
    scratch_dir,
    zipf_cum_weights,
)

PG_URL = os.environ.get("CMEM_BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")
REDIS_URL = os.environ.get("CMEM_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
CLIENTS = 16
TECH = [
    "cache",
    "migration",
    "gate",
    "session",
    "token",
    "search",
    "index",
    "worker",
    "queue",
    "redis",
    "postgres",
    "hook",
    "summary",
    "parser",
    "config",
    "deploy",
    "schema",
    "router",
    "middleware",
    "timeout",
    "retry",
    "lock",
    "transaction",
    "compress",
    "observation",
    "prompt",
    "context",
    "spool",
    "ledger",
    "admin",
    "template",
    "static",
    "logging",
    "metrics",
    "auth",
]
QUERIES = [
    "cache",
    "migration",
    "session token",
    "redis queue timeout",
    "postgres schema migration",
    "gate",
    "middleware auth",
    "compr",
    '"retry lock"',
    "deploy OR rollback",
]
GATE_FILES = 20
BATCH = 20_000


FILLER = [
    "the",
    "a",
    "to",
    "of",
    "and",
    "in",
    "for",
    "with",
    "is",
    "on",
    "file",
    "function",
    "value",
    "now",
    "when",
    "returns",
    "uses",
    "test",
    "line",
    "call",
]


def _vocabulary(rng: random.Random) -> tuple[list[str], list[float]]:
    """~20k words with Zipf frequencies: filler and stop words on top, the query words at
    ranks 100-135, so `cache` is in ~5% of rows, as a common term of real memory is."""
    syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "su", "da", "fi", "go", "ba"]
    words: list[str] = list(FILLER)
    seen = set(words) | set(TECH)
    while len(words) < 20_000:
        word = "".join(rng.choice(syllables) for _ in range(rng.randint(2, 5)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    words[100:100] = TECH
    return words, zipf_cum_weights(len(words))


def _pool(
    rng: random.Random, words: list[str], cum: list[float], length: int, count: int = 40_000
) -> list[str]:
    # Seeding 1M rows word by word costs minutes of Python; rows draw from pools instead.
    return [" ".join(rng.choices(words, cum_weights=cum, k=length)) for _ in range(count)]


# --- child side: runs with Django set up on the benchmark database ----------------------


def child_seed(size: int, project_dir: str) -> dict[str, Any]:
    django_setup()
    from django.db import connection
    from django.utils import timezone

    from memory.models import Observation, ObservationFile, Session
    from memory.projects import project_for_cwd

    rng = random.Random(9)
    words, cum = _vocabulary(rng)
    gate_project = project_for_cwd(project_dir).name
    projects = [gate_project] + [f"github.com/acme/service-{i}" for i in range(1, 10)]
    n_sessions = max(10, size // 1000)
    now = timezone.now()
    started = time.perf_counter()
    sessions = Session.objects.bulk_create(
        [
            Session(
                session_id=f"bench-{i}",
                project=projects[i % len(projects)],
                project_root=project_dir,
            )
            for i in range(n_sessions)
        ],
        batch_size=5000,
    )
    session_ids = [s.pk for s in sessions]
    base = (Observation.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1

    pools = {k: _pool(rng, words, cum, k) for k in (6, 8, 10, 30)}

    def text(k: int) -> str:
        pool = pools[k]
        return pool[rng.randrange(len(pool))]

    obs_fields = list(Observation._meta.concrete_fields)
    file_fields = [f for f in ObservationFile._meta.concrete_fields if f.name != "id"]

    def rows(start: int, count: int) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        obs_rows, file_rows = [], []
        for pk in range(start, start + count):
            si = rng.randrange(n_sessions)
            project = projects[si % len(projects)]
            path = (
                f"src/f{rng.randrange(GATE_FILES)}.py"
                if project == gate_project
                else f"src/mod{rng.randrange(50)}/file{rng.randrange(40)}.py"
            )
            created = now - timedelta(seconds=(base + size - pk) * 30)
            values = {
                "id": pk,
                "session": session_ids[si],
                "project": project,
                "type": rng.choice(["discovery", "change", "bugfix", "feature", "decision"]),
                "title": text(6),
                "subtitle": text(10),
                "facts": [text(8), text(8)],
                "narrative": text(30),
                "concepts": [rng.choice(["gotcha", "pattern", "how-it-works", "trade-off"])],
                "files_read": [path],
                "files_modified": [],
                "tool_name": "Read",
                "compressor": "offline",
                "created": created,
            }
            obs_rows.append(
                tuple(
                    _prep(f, values.get(f.name, values.get(f.attname, f.get_default())), connection)
                    for f in obs_fields
                )
            )
            fvalues = {
                "observation": pk,
                "project": project,
                "path": path,
                "role": "read",
                "content_hash": "",
                "created": created,
            }
            file_rows.append(
                tuple(
                    _prep(f, fvalues.get(f.name, f.get_default()), connection) for f in file_fields
                )
            )
        return obs_rows, file_rows

    obs_table, file_table = Observation._meta.db_table, ObservationFile._meta.db_table
    obs_cols = ", ".join(f.column for f in obs_fields)
    file_cols = ", ".join(f.column for f in file_fields)
    pg = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        if pg:
            cursor.execute(f"DROP INDEX IF EXISTS {obs_table}_search_gin")
        for start in range(base, base + size, BATCH):
            count = min(BATCH, base + size - start)
            obs_rows, file_rows = rows(start, count)
            if pg:
                raw = connection.connection
                with raw.cursor() as pgcur:
                    with pgcur.copy(f"COPY {obs_table} ({obs_cols}) FROM STDIN") as copy:
                        for row in obs_rows:
                            copy.write_row(row)
                    with pgcur.copy(f"COPY {file_table} ({file_cols}) FROM STDIN") as copy:
                        for row in file_rows:
                            copy.write_row(row)
            else:
                marks = ", ".join(["%s"] * len(obs_fields))
                cursor.executemany(
                    f"INSERT INTO {obs_table} ({obs_cols}) VALUES ({marks})", obs_rows
                )
                marks = ", ".join(["%s"] * len(file_fields))
                cursor.executemany(
                    f"INSERT INTO {file_table} ({file_cols}) VALUES ({marks})", file_rows
                )
        inserted = time.perf_counter() - started
        if pg:
            cursor.execute("SET maintenance_work_mem = '512MB'")
            cursor.execute(
                f"CREATE INDEX {obs_table}_search_gin ON {obs_table} USING gin (search_vector)"
            )
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('{obs_table}', 'id'), (SELECT max(id) FROM {obs_table}))"
            )
            cursor.execute(f"ANALYZE {obs_table}")
            cursor.execute(f"ANALYZE {file_table}")
        else:
            cursor.execute("ANALYZE")
    return {
        "seed_s": time.perf_counter() - started,
        "insert_s": inserted,
        "rows": size,
        "project": gate_project,
    }


def _prep(field: Any, value: Any, connection: Any) -> Any:
    if field.get_internal_type() == "JSONField":
        return json.dumps(value)
    if connection.vendor == "postgresql":
        return value  # COPY adapts ints, strings and aware datetimes itself
    return field.get_db_prep_save(value, connection)


def child_measure(runs: int, project_dir: str) -> dict[str, Any]:
    django_setup()
    from memory.agents.base import HookEvent
    from memory.briefing.gate import gate_decide
    from memory.retrieval.search.query import SearchQuery
    from memory.retrieval.search.service import search

    for q in QUERIES:  # warm the caches once, as a running worker would be
        search(SearchQuery(text=q, limit=20))
    samples: list[float] = []
    hits = 0
    for _ in range(runs):
        for q in QUERIES:
            t0 = time.perf_counter()
            hits += len(search(SearchQuery(text=q, limit=20)))
            samples.append(time.perf_counter() - t0)
    gate: list[float] = []
    decisions: dict[str, int] = {}
    for i in range(max(50, runs * 2)):
        event = HookEvent(
            platform="claude-code",
            event="file-context",
            session_id=f"gate-{uuid.uuid4().hex}",
            cwd=project_dir,
            hook_event_name="PreToolUse",
            tool_name="Read",
            tool_input={"file_path": f"{project_dir}/src/f{i % GATE_FILES}.py"},
        )
        t0 = time.perf_counter()
        result = gate_decide(event=event)
        gate.append(time.perf_counter() - t0)
        decision = result.gate.decision if result.gate else "none"
        decisions[decision] = decisions.get(decision, 0) + 1
    return {
        "search_p50_ms": percentile(samples, 0.5) * 1000,
        "search_p99_ms": percentile(samples, 0.99) * 1000,
        "searches": len(samples),
        "hits_per_search": hits / max(1, len(samples)),
        "gate_p50_ms": percentile(gate, 0.5) * 1000,
        "gate_p99_ms": percentile(gate, 0.99) * 1000,
        "gate_decisions": decisions,
    }


# --- parent side ---------------------------------------------------------------------------


def _ingest(env: dict[str, str], project_dir: str, total: int) -> dict[str, Any]:
    """A real worker; CLIENTS threads post observation hooks (one session each) over HTTP."""
    port = free_port()
    env = dict(env, CLAUDE_MEM_WORKER_PORT=str(port), CLAUDE_MEM_WORKER_HOST="127.0.0.1")
    with running_worker(env, "--no-migrate") as live:
        url = live.url
        latencies: list[float] = []
        errors: list[str] = []
        lock = threading.Lock()

        def post(event: str, body: dict[str, Any]) -> None:
            req = urllib.request.Request(
                f"{url}/api/hooks/claude-code/{event}",
                data=json.dumps(body).encode(),
                headers={
                    "Content-Type": "application/json",
                    **owner_headers(env["CLAUDE_MEM_DATA_DIR"]),
                },
            )
            t0 = time.perf_counter()
            try:
                with urllib.request.urlopen(req, timeout=30) as resp:
                    resp.read()
            except OSError as exc:
                with lock:
                    errors.append(str(exc))
                return
            with lock:
                latencies.append(time.perf_counter() - t0)

        def client(n: int) -> None:
            sid = f"ingest-{n}-{uuid.uuid4().hex[:8]}"
            post(
                "session-init",
                {
                    "session_id": sid,
                    "cwd": project_dir,
                    "hook_event_name": "UserPromptSubmit",
                    "prompt": "bench",
                },
            )
            for i in range(total // CLIENTS):
                post(
                    "observation",
                    {
                        "session_id": sid,
                        "cwd": project_dir,
                        "hook_event_name": "PostToolUse",
                        "tool_name": "Bash",
                        "tool_use_id": f"toolu_{n}_{i}",
                        "tool_input": {"command": f"pytest -k case_{i}"},
                        "tool_response": {
                            "stdout": f"{i} passed in 0.1s",
                            "stderr": "",
                            "interrupted": False,
                        },
                    },
                )

        threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
        return {
            "ingest_per_s": len(latencies) / wall,
            "ingest_p50_ms": percentile(latencies, 0.5) * 1000 if latencies else 0.0,
            "ingest_p99_ms": percentile(latencies, 0.99) * 1000 if latencies else 0.0,
            "ingest_requests": len(latencies),
            "ingest_errors": len(errors),
        }


def _bench_backend(
    backend: str, size: int, runs: int, ingest_total: int, out: Any
) -> dict[str, Any]:
    with scratch_dir(f"cmem-scale-{backend}-") as work:
        project = work / "bench-project"
        (project / "src").mkdir(parents=True)
        for i in range(GATE_FILES):
            path = project / "src" / f"f{i}.py"
            path.write_text(f"# bench file {i}\n" + "x = 1  # padding\n" * 400)
            # Older than every seeded observation: unchanged since, so the gate may deny.
            os.utime(path, (946684800, 946684800))
        db_name = f"cmem_bench_{os.getpid()}"
        extra: dict[str, str] = {}
        if backend == "postgresql":
            extra = {
                "CLAUDE_MEM_DATABASE_URL": f"{PG_URL}/{db_name}",
                "CLAUDE_MEM_QUEUE_URL": REDIS_URL,
                "CMEM_HUEY_NAME": f"cmem-bench-{os.getpid()}",
            }
            _pg_admin(f'CREATE DATABASE "{db_name}"')
        env = child_env(
            work / "data",
            CLAUDE_MEM_COMPRESSOR="offline",
            DJANGO_SETTINGS_MODULE="cmem_site.settings",
            **extra,
        )
        try:
            t0 = time.perf_counter()
            out.write(f"{backend}: migrating and seeding {size:,} observations…")
            seeded = migrated_and_seeded("tests.bench.scale", env, size, project)
            out.write(
                f"{backend}: migrated and seeded in {time.perf_counter() - t0:.1f}s "
                f"(seed {seeded['seed_s']:.1f}s, rows {seeded['insert_s']:.1f}s); measuring…"
            )
            measured = child_json("tests.bench.scale", env, "measure", str(runs), str(project))
            ingest = _ingest(env, str(project), ingest_total)
            return {"backend": backend, "size": size, **seeded, **measured, **ingest}
        finally:
            if backend == "postgresql":
                _pg_admin(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
                _redis_clear(extra["CMEM_HUEY_NAME"])


def _pg_admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(f"{PG_URL}/postgres", autocommit=True, connect_timeout=5) as conn:
        conn.execute(sql)


def _redis_clear(name: str) -> None:
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"*{name}*"))
    if keys:
        client.delete(*keys)


def run(*, out: Any, options: dict[str, Any]) -> None:
    quick = bool(options.get("quick"))
    size = options.get("size") or (20_000 if quick else 1_000_000)
    sqlite_size = min(size, 10_000 if quick else 200_000)
    runs = options.get("runs") or (5 if quick else 30)
    ingest_total = 320 if quick else 3200
    results = [
        _bench_backend("postgresql", size, runs, ingest_total, out),
        _bench_backend("sqlite", sqlite_size, runs, ingest_total, out),
    ]
    rows = [
        ("observations", "{:,}", "size"),
        ("seed (s)", "{:.1f}", "seed_s"),
        ("search p50 (ms)", "{:.1f}", "search_p50_ms"),
        ("search p99 (ms)", "{:.1f}", "search_p99_ms"),
        ("gate p50 (ms)", "{:.2f}", "gate_p50_ms"),
        ("gate p99 (ms)", "{:.2f}", "gate_p99_ms"),
        (f"ingest, {CLIENTS} clients (events/s)", "{:.0f}", "ingest_per_s"),
        ("ingest p50 (ms)", "{:.1f}", "ingest_p50_ms"),
        ("ingest p99 (ms)", "{:.1f}", "ingest_p99_ms"),
        ("ingest errors", "{}", "ingest_errors"),
    ]
    out.write("| | PostgreSQL + Redis | SQLite |\n|---|---|---|")
    for label, fmt, key in rows:
        out.write(f"| {label} | {fmt.format(results[0][key])} | {fmt.format(results[1][key])} |")
    out.write(json.dumps(results, default=str))


if __name__ == "__main__":
    child_main(seed=child_seed, measure=child_measure)
