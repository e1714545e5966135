"""`python -m tests.bench scale` (`cmem bench scale` in a checkout): cost at 10k, 100k and 1M rows.

`--sizes 10000,100000,1000000` (the default; `--quick`: 10,000 only), `--backend sqlite |
postgresql | both` (default both), `--runs N` (timed rounds of each query, default 5),
`--keep DIR` (seeded stores are kept in DIR and reused by the next run with the same DIR:
a 1M seed takes minutes). Run it with the embeddings extra (`.venv-ext/bin/python -m
tests.bench scale`): without it, semantic and hybrid search are reported as skipped, not
faked.

Per backend and size, one store (SQLite: a data dir; PostgreSQL: a database of its own on
CMEM_BENCH_PG_URL's server, the queue on CMEM_BENCH_REDIS_URL):

1. `cmem migrate`, then `scale_seed.child_seed`: N observations in bulk over many projects
   and files, a summary per session, a random unit vector per row (kept stores: the rows a
   previous run added are deleted instead, `child_reset`).
2. In a child process on that database (`child_measure`): keyword, semantic and hybrid
   search through `memory.retrieval.search.service.search`, interleaved query by query,
   p50/p99; the gate decision (`gate_decide`, a new session's first Read of a gate-project
   file with history) p50/p99; the SessionStart index rendered cold (`context_text` after
   the cache is invalidated) p50. Then the database's size on disk (SQLite: the database
   file, its WAL and the vector copy the first semantic search built; PostgreSQL:
   `pg_database_size`).
3. Real workers (`cmem serve`; PostgreSQL: two of them, own data dirs and ports, one
   database and queue): RSS summed over each worker's processes, idle; the same searches
   over HTTP (GET /api/search?mode=…, keep-alive, the requests alternating between the
   workers) p50/p99; ingest of observation hooks over one keep-alive connection (p50/p99:
   the "ingest p50" of issue 33's targets) and from 16 concurrent clients spread over the
   workers (events/s, p50/p99); RSS after that workload.
4. In a child again (`child_after`): ingest in-process (`hook_handle`, what the worker's raw
   lane runs) p50, and `cmem import json` of a 10,000-row export (`import_rate`'s
   generator) into the sized store: observations/s, embedding excluded.

Over ~500 lines on purpose: the steps and the report of one matrix read best together;
seeding is scale_seed.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from memory.management.commands.bench import _ingest_times
from tests.bench.harness import (
    LiveWorker,
    child_json,
    cmem_migrate,
    django_setup,
    free_port,
    owner_headers,
    percentile,
    running_worker,
    worker_env,
)
from tests.bench.scale_seed import GATE_FILES, child_seed, vectors_possible
from tests.bench.vector_memory import _tree_rss_mb

PG_URL = os.environ.get("CMEM_BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")
REDIS_URL = os.environ.get("CMEM_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
SIZES = (10_000, 100_000, 1_000_000)
BACKENDS = ("sqlite", "postgresql")
PG_WORKERS = 2
CLIENTS = 16
IMPORT_ROWS = 10_000
# (text, filtered to the gate's project): words of the seeded vocabulary, FTS syntax
# (phrase, OR, prefix) and plain questions; a third of them filtered to the gate's project.
QUERIES: list[tuple[str, bool]] = [
    ("cache", False),
    ("migration", False),
    ("session token", True),
    ("redis queue timeout", False),
    ("postgres schema migration", False),
    ("gate", True),
    ("middleware auth", False),
    ("compr*", False),
    ('"retry lock"', True),
    ("deploy OR rollback", False),
    ("why does the worker retry the queue after a timeout", False),
    ("fixed the cache invalidation in the parser", True),
]
SEMANTIC_SKIPPED = "skipped: the embeddings extra is not installed (run with .venv-ext/bin/python)"


def _modes() -> list[str]:
    return ["keyword", "semantic", "hybrid"] if vectors_possible() else ["keyword"]


# --- child side: runs with Django set up on the benchmark database ----------------------


def _vector_copies_built() -> float:
    """Build the on-disk vector copies first (SQLite), and return the seconds it took: a
    search that finds a copy missing or behind answers by keyword while it is built in the
    background, so the measured searches would not be searches by meaning."""
    from django.db import connection

    from memory.retrieval.embeddings import KINDS, index, ondisk
    from memory.retrieval.embeddings.model import get_model

    if connection.vendor != "sqlite":
        return 0.0
    began = time.perf_counter()
    model = get_model()
    for kind in index.kinds_stored(list(KINDS)):
        ondisk.sync(kind, model.version, model.dim)
    return time.perf_counter() - began


def child_measure(runs: int, project_dir: str) -> dict[str, Any]:
    django_setup()
    # After django.setup(), in the child: these import Django models.
    from memory.agents.base import HookEvent
    from memory.briefing.context import context_text
    from memory.briefing.gate import gate_decide
    from memory.models import ContextCache
    from memory.projects import project_for_cwd
    from memory.retrieval.search.query import SearchQuery
    from memory.retrieval.search.service import search

    project = project_for_cwd(project_dir)
    modes = _modes()

    def query(text: str, filtered: bool, mode: str) -> SearchQuery:
        return SearchQuery(text=text, project=project.name if filtered else None, mode=mode)  # type: ignore[arg-type]

    copies_s = _vector_copies_built() if "semantic" in modes else 0.0
    began = time.perf_counter()
    for text, filtered in QUERIES:  # warm: page cache, the vector copy, the model
        for mode in modes:
            search(query(text, filtered, mode))
    warm_s = time.perf_counter() - began
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    hits: dict[str, int] = dict.fromkeys(modes, 0)
    for _ in range(runs):
        for text, filtered in QUERIES:
            for mode in modes:
                t0 = time.perf_counter()
                hits[mode] += len(search(query(text, filtered, mode)))
                samples[mode].append(time.perf_counter() - t0)
    gate: list[float] = []
    decisions: dict[str, int] = {}
    for i in range(max(50, runs * 10)):
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
    context: list[float] = []
    chars = 0
    for _ in range(max(10, runs * 2)):
        ContextCache.invalidate(project=project.name)  # outside the timing
        t0 = time.perf_counter()
        chars = len(context_text(project=project.name, root=project.root))
        context.append(time.perf_counter() - t0)
    out: dict[str, Any] = {
        "copies_s": copies_s,
        "warm_s": warm_s,
        "gate_p50_ms": percentile(gate, 0.5) * 1000,
        "gate_p99_ms": percentile(gate, 0.99) * 1000,
        "gate_decisions": decisions,
        "context_p50_ms": percentile(context, 0.5) * 1000,
        "context_chars": chars,
    }
    for mode in modes:
        out[f"{mode}_p50_ms"] = percentile(samples[mode], 0.5) * 1000
        out[f"{mode}_p99_ms"] = percentile(samples[mode], 0.99) * 1000
        out[f"{mode}_hits"] = hits[mode] / max(1, len(samples[mode]))
    return out


def child_after(import_rows: int, project_dir: str) -> dict[str, Any]:
    """Ingest in-process, then `cmem import json` of `import_rows` generated observations."""
    django_setup()
    # After django.setup(), in the child: these import Django models.
    from django.core.management import call_command
    from huey.contrib.djhuey import HUEY

    from memory.hooks.dispatch import hook_handle
    from memory.management.commands.bench import _observation
    from memory.models import Observation
    from tests.bench.import_rate import _observations, write_json

    ingest: list[float] = []
    for n in range(120):
        t0 = time.perf_counter()
        hook_handle(platform="claude-code", event="observation", body=_observation(n))
        if n >= 20:  # the first ones warm connections and caches
            ingest.append(time.perf_counter() - t0)
    folder = Path(tempfile.mkdtemp(prefix="cmem-scale-import-"))
    try:
        export = folder / "export.json"
        write_json(_observations(import_rows, 7), export)
        before = Observation.objects.count()
        t0 = time.perf_counter()
        call_command("import", "json", str(export), stdout=open(os.devnull, "w"))  # noqa: SIM115 - closed with the process
        took = time.perf_counter() - t0
        added = Observation.objects.count() - before
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    HUEY.flush()  # the tasks these hooks and the import queued: no worker of this bench runs them
    return {
        "ingest_inprocess_p50_ms": percentile(ingest, 0.5) * 1000,
        "import_s": took,
        "import_rows": added,
        "import_per_s": added / took if took else 0.0,
    }


def child_reset(_: int, seeded_json: str) -> dict[str, Any]:
    """A kept store back to what its seed left: every row a run added since is deleted
    (sessions cascade to their rows; the triggers take their vectors and FTS entries)."""
    django_setup()
    # After django.setup(), in the child: these import Django models.
    from memory.models import Embedding, Observation, Session, Summary

    seeded = json.loads(Path(seeded_json).read_text())
    removed = Session.objects.filter(pk__gt=seeded["max_session"]).delete()[0]
    removed += Observation.objects.filter(pk__gt=seeded["max_observation"]).delete()[0]
    removed += Summary.objects.filter(pk__gt=seeded["max_summary"]).delete()[0]
    removed += Embedding.objects.filter(kind="prompt").delete()[0]
    return {"removed": removed, "rows": Observation.objects.count()}


# --- parent side ---------------------------------------------------------------------------


@dataclass
class Store:
    backend: str
    size: int
    root: Path
    envs: list[dict[str, str]]  # one per worker; the first is the children's too
    db_name: str = ""
    seeded: dict[str, Any] = field(default_factory=dict)

    @property
    def project(self) -> Path:
        return self.root / "project"


def _pg_admin(sql: str) -> Any:
    import psycopg

    with psycopg.connect(f"{PG_URL}/postgres", autocommit=True, connect_timeout=5) as conn:
        cursor = conn.execute(sql)
        return cursor.fetchall() if cursor.description else None


def _redis_clear(name: str) -> None:
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"*{name}*"))
    if keys:
        client.delete(*keys)


def _write_gate_files(project: Path) -> None:
    (project / "src").mkdir(parents=True, exist_ok=True)
    for i in range(GATE_FILES):
        path = project / "src" / f"f{i}.py"
        path.write_text(f"# scale bench file {i}\n" + "value = compute(value)  # padding\n" * 200)
        # Older than every seeded observation: unchanged since, so the gate may deny.
        os.utime(path, (946684800, 946684800))


@contextlib.contextmanager
def _store(backend: str, size: int, keep: str | None, out: Any) -> Iterator[Store]:
    """A migrated, seeded store (or a kept one, reset); dropped after unless kept."""
    if keep:
        root = Path(keep).resolve() / f"{backend}-{size}"
        tag = hashlib.sha1(str(root).encode()).hexdigest()[:8]
        db_name = f"cmem_scale_keep_{size}_{tag}"
    else:
        root = Path(tempfile.mkdtemp(prefix=f"cmem-scale-{backend}-{size}-"))
        db_name = f"cmem_scale_{os.getpid()}_{size}"
    extra: dict[str, str] = {}
    if backend == "postgresql":
        extra = {
            "CLAUDE_MEM_DATABASE_URL": f"{PG_URL}/{db_name}",
            "CLAUDE_MEM_QUEUE_URL": REDIS_URL,
            "CMEM_HUEY_NAME": f"cmem-{db_name}",
        }
    workers = PG_WORKERS if backend == "postgresql" else 1
    envs = []
    for n in range(workers):
        data = root / ("data" if n == 0 else f"data{n + 1}")
        data.mkdir(mode=0o700, parents=True, exist_ok=True)
        envs.append(
            worker_env(
                data,
                free_port(),
                CLAUDE_MEM_COMPRESSOR="offline",
                DJANGO_SETTINGS_MODULE="cmem_site.settings",
                **extra,
            )
        )
    store = Store(backend, size, root, envs, db_name if backend == "postgresql" else "")
    marker = root / "seeded.json"
    try:
        if backend == "postgresql":
            _redis_clear(extra["CMEM_HUEY_NAME"])
            exists = _pg_admin(f"SELECT 1 FROM pg_database WHERE datname = '{db_name}'")
            if not exists or not marker.exists():
                marker.unlink(missing_ok=True)
                _pg_admin(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
                _pg_admin(f'CREATE DATABASE "{db_name}"')
        _write_gate_files(store.project)
        env = envs[0]
        if marker.exists():
            store.seeded = json.loads(marker.read_text())
            reset = child_json("tests.bench.scale", env, "reset", "0", str(marker))
            out.write(
                f"{backend} {size:,}: reusing the kept store ({reset['removed']:,} rows removed)"
            )
            store.seeded.update(reused=True, reset_rows=reset["rows"])
        else:
            out.write(f"{backend} {size:,}: migrating and seeding…")
            for stale in Path(env["CLAUDE_MEM_DATA_DIR"]).glob("cmem.sqlite3*"):
                stale.unlink()  # a kept store whose seed was interrupted: seeded again whole
            cmem_migrate(env)
            store.seeded = child_json(
                "tests.bench.scale", env, "seed", str(size), str(store.project), timeout=4 * 3600
            )
            marker.write_text(json.dumps(store.seeded))
            out.write(
                f"{backend} {size:,}: seeded in {store.seeded['seed_s']:.1f}s "
                f"({size / store.seeded['seed_s']:,.0f} rows/s)"
            )
        yield store
    finally:
        if backend == "postgresql":
            _redis_clear(extra["CMEM_HUEY_NAME"])
        if not keep:
            if backend == "postgresql":
                _pg_admin(f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
            shutil.rmtree(root, ignore_errors=True)


def _db_size_mb(store: Store) -> float:
    if store.backend == "postgresql":
        rows = _pg_admin(f"SELECT pg_database_size('{store.db_name}')")
        return int(rows[0][0]) / 1e6
    data = Path(store.envs[0]["CLAUDE_MEM_DATA_DIR"])
    files = [*data.glob("cmem.sqlite3*"), *(data / "vectors").glob("*")]
    return sum(f.stat().st_size for f in files if f.is_file()) / 1e6


class _Client:
    """One keep-alive connection to a worker, as its owner."""

    def __init__(self, live: LiveWorker) -> None:
        self.port = live.port
        self.conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=300)
        self.headers = owner_headers(live.data_dir)

    def get(self, path: str) -> dict[str, Any]:
        try:
            self.conn.request("GET", path, headers=self.headers)
            resp = self.conn.getresponse()
        except (http.client.RemoteDisconnected, ConnectionError):
            # The worker drops a keep-alive connection idle past its header timeout (30 s,
            # granian_serving): while the other worker serves a slow search, this one waits.
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
            self.conn.request("GET", path, headers=self.headers)
            resp = self.conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"GET {path} answered {resp.status}: {body[:300]!r}")
        return dict(json.loads(body))


def _http_search(workers: list[LiveWorker], runs: int, project: str) -> dict[str, Any]:
    modes = _modes()
    clients = [_Client(live) for live in workers]

    def path(text: str, filtered: bool, mode: str) -> str:
        params = {"q": text, "mode": mode, **({"project": project} if filtered else {})}
        return "/api/search?" + urlencode(params)

    for client in clients:  # warm each worker: its caches, its model, its vector copy
        for text, filtered in QUERIES:
            for mode in modes:
                got = client.get(path(text, filtered, mode))
                if got["mode"] != mode:
                    raise RuntimeError(
                        f"asked {mode}, the worker searched {got['mode']}: {got['note']}"
                    )
    samples: dict[str, list[float]] = {mode: [] for mode in modes}
    n = 0
    for _ in range(runs):
        for text, filtered in QUERIES:
            for mode in modes:
                client = clients[n % len(clients)]
                n += 1
                t0 = time.perf_counter()
                client.get(path(text, filtered, mode))
                samples[mode].append(time.perf_counter() - t0)
    for client in clients:
        client.conn.close()
    out: dict[str, Any] = {}
    for mode in modes:
        out[f"http_{mode}_p50_ms"] = percentile(samples[mode], 0.5) * 1000
        out[f"http_{mode}_p99_ms"] = percentile(samples[mode], 0.99) * 1000
    return out


def _http_ingest_concurrent(
    workers: list[LiveWorker], project_dir: str, total: int
) -> dict[str, Any]:
    """CLIENTS threads, spread over the workers, post observation hooks (a session each)."""
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()

    def client(n: int) -> None:
        live = workers[n % len(workers)]
        conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=60)
        headers = {"Content-Type": "application/json", **owner_headers(live.data_dir)}
        sid = f"ingest-{n}-{uuid.uuid4().hex[:8]}"
        bodies = [
            ("session-init", {"session_id": sid, "cwd": project_dir, "prompt": "bench",
                              "hook_event_name": "UserPromptSubmit"}),
        ] + [
            ("observation", {"session_id": sid, "cwd": project_dir, "hook_event_name": "PostToolUse",
                             "tool_name": "Bash", "tool_use_id": f"toolu_{n}_{i}",
                             "tool_input": {"command": f"pytest -k case_{i}"},
                             "tool_response": {"stdout": f"{i} passed in 0.1s", "stderr": "", "interrupted": False}})
            for i in range(total // CLIENTS)
        ]  # fmt: skip
        for event, body in bodies:
            t0 = time.perf_counter()
            try:
                conn.request("POST", f"/api/hooks/claude-code/{event}", json.dumps(body), headers)
                resp = conn.getresponse()
                resp.read()
            except OSError as exc:
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=60)
                with lock:
                    errors.append(str(exc))
                continue
            with lock:
                if resp.status != 200:
                    errors.append(f"{event} answered {resp.status}")
                else:
                    latencies.append(time.perf_counter() - t0)
        conn.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {
        "ingest16_per_s": len(latencies) / wall,
        "ingest16_p50_ms": percentile(latencies, 0.5) * 1000 if latencies else 0.0,
        "ingest16_p99_ms": percentile(latencies, 0.99) * 1000 if latencies else 0.0,
        "ingest16_errors": len(errors),
    }


def _with_workers(store: Store, runs: int, single: int, concurrent: int) -> dict[str, Any]:
    with contextlib.ExitStack() as stack:
        workers = [stack.enter_context(running_worker(env, "--no-migrate")) for env in store.envs]
        time.sleep(5)  # the consumers' start-up tasks settle
        pids = [live.proc.pid for live in workers if live.proc is not None]
        out: dict[str, Any] = {"rss_idle_mb": [_tree_rss_mb(pid) for pid in pids]}
        out.update(_http_search(workers, runs, store.seeded["project"]))
        auth = owner_headers(workers[0].data_dir)
        single_times = _ingest_times(
            workers[0].port, single, start=time.time_ns() % 10**9, auth=auth
        )
        out["ingest1_p50_ms"] = percentile(single_times, 0.5) * 1000
        out["ingest1_p99_ms"] = percentile(single_times, 0.99) * 1000
        out.update(_http_ingest_concurrent(workers, str(store.project), concurrent))
        time.sleep(2)
        out["rss_after_mb"] = [_tree_rss_mb(pid) for pid in pids]
        return out


def _bench(backend: str, size: int, options: dict[str, Any], out: Any) -> dict[str, Any]:
    runs = options["runs"]
    small = size < 10_000  # the smoke test's store: a few requests of each kind
    with _store(backend, size, options.get("keep"), out) as store:
        env = store.envs[0]
        result: dict[str, Any] = {"backend": backend, "size": size, **store.seeded}
        out.write(f"{backend} {size:,}: measuring in-process…")
        result.update(
            child_json("tests.bench.scale", env, "measure", str(runs), str(store.project))
        )
        result["db_mb"] = _db_size_mb(store)
        out.write(f"{backend} {size:,}: measuring {len(store.envs)} worker(s) over HTTP…")
        result.update(
            _with_workers(store, runs, 20 if small else 200, 2 * CLIENTS if small else 1600)
        )
        out.write(f"{backend} {size:,}: ingest in-process and import…")
        rows = min(IMPORT_ROWS, size)
        result.update(child_json("tests.bench.scale", env, "after", str(rows), str(store.project)))
        result["load_average"] = os.getloadavg()[0]
        return result


ROWS: list[tuple[str, str, str]] = [
    ("seed (s; reused: kept store)", "seed", ""),
    ("database on disk (MB)", "{:.0f}", "db_mb"),
    ("keyword p50 / p99, HTTP (ms)", "pair", "http_keyword"),
    ("semantic p50 / p99, HTTP (ms)", "pair", "http_semantic"),
    ("hybrid p50 / p99, HTTP (ms)", "pair", "http_hybrid"),
    ("keyword p50 / p99, in-process (ms)", "pair", "keyword"),
    ("semantic p50 / p99, in-process (ms)", "pair", "semantic"),
    ("hybrid p50 / p99, in-process (ms)", "pair", "hybrid"),
    ("hits per search (keyword / semantic / hybrid)", "hits", ""),
    ("gate decision p50 / p99 (ms)", "pair", "gate"),
    ("context render, cold, p50 (ms)", "{:.2f}", "context_p50_ms"),
    ("ingest p50 / p99, HTTP, 1 client keep-alive (ms)", "pair", "ingest1"),
    ("ingest p50 / p99, HTTP, 16 clients (ms)", "pair", "ingest16"),
    ("ingest, 16 clients (events/s; errors)", "ingest16", ""),
    ("ingest p50, in-process (ms)", "{:.2f}", "ingest_inprocess_p50_ms"),
    ("worker RSS idle (MB, per worker)", "mb", "rss_idle_mb"),
    ("worker RSS after the workload (MB, per worker)", "mb", "rss_after_mb"),
    ("import json, 10k rows (observations/s)", "{:,.0f}", "import_per_s"),
    ("load average (1 min, at the end)", "{:.1f}", "load_average"),
]


def _cell(r: dict[str, Any], fmt: str, key: str) -> str:
    if fmt == "seed":
        return "reused" if r.get("reused") else f"{r['seed_s']:.0f}"
    if fmt == "pair":
        if f"{key}_p50_ms" not in r:
            return "skipped"
        return f"{r[f'{key}_p50_ms']:.2f} / {r[f'{key}_p99_ms']:.2f}"
    if fmt == "hits":
        return " / ".join(
            f"{r[f'{m}_hits']:.1f}" if f"{m}_hits" in r else "-"
            for m in ("keyword", "semantic", "hybrid")
        )
    if fmt == "ingest16":
        return f"{r['ingest16_per_s']:.0f}; {r['ingest16_errors']}"
    if fmt == "mb":
        return " + ".join(f"{v:.0f}" for v in r[key])
    return fmt.format(r[key])


def report(results: list[dict[str, Any]], out: Any) -> None:
    for backend in BACKENDS:
        mine = [r for r in results if r["backend"] == backend]
        if not mine:
            continue
        what = {
            "sqlite": "SQLite, 1 worker",
            "postgresql": f"PostgreSQL + Redis, {PG_WORKERS} workers on one database"
            + (
                " (pgvector)"
                if mine[0].get("pgvector")
                else " (no pgvector on this server: vectors by the blob fallback)"
            ),
        }[backend]
        out.write(f"\n{what}\n")
        out.write("| observations | " + " | ".join(f"{r['size']:,}" for r in mine) + " |")
        out.write("|---|" + "---:|" * len(mine))
        for label, fmt, key in ROWS:
            out.write(f"| {label} | " + " | ".join(_cell(r, fmt, key) for r in mine) + " |")
    if "semantic" not in _modes():
        out.write(f"semantic and hybrid: {SEMANTIC_SKIPPED}")
    out.write(json.dumps(results, default=str))


def _options(options: dict[str, Any]) -> dict[str, Any]:
    if options.get("sizes"):
        sizes = [int(s.replace("_", "")) for s in str(options["sizes"]).split(",") if s.strip()]
    elif options.get("size"):
        sizes = [int(options["size"])]
    else:
        sizes = [10_000] if options.get("quick") else list(SIZES)
    backend = options.get("backend") or "both"
    backends = list(BACKENDS) if backend == "both" else [backend]
    runs = int(options.get("runs") or (2 if options.get("quick") else 5))
    return {"sizes": sizes, "backends": backends, "runs": runs, "keep": options.get("keep")}


def run(*, out: Any, options: dict[str, Any]) -> None:
    chosen = _options(options)
    if "semantic" not in _modes():
        out.write(f"semantic and hybrid search: {SEMANTIC_SKIPPED}")
    out.write(f"{sys.executable}; load average {os.getloadavg()[0]:.1f} at the start")
    results = []
    for backend in chosen["backends"]:
        for size in chosen["sizes"]:
            results.append(_bench(backend, size, chosen, out))
    report(results, out)


STEPS = {"seed": child_seed, "measure": child_measure, "after": child_after, "reset": child_reset}

if __name__ == "__main__":
    # `python -m tests.bench.scale STEP N ARG` (the parent's children, see child_json).
    print(json.dumps(STEPS[sys.argv[1]](int(sys.argv[2]), sys.argv[3])))
