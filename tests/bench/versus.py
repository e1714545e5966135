"""`python -m tests.bench versus`: cmem's search and claude-mem 13.25.3's, side by side.

Issue 33's search targets, measured the way each system serves its users: over each
worker's HTTP API, on loopback, with the same data, interleaved A B A B.

1. Per size (10,000 and 100,000 observations; `--size`, `--quick` for 10k only), the same
   rows are written into a cmem data dir (migrated, then a child `python -m
   tests.bench.versus seed N` with bulk_create) and into claude-mem's own SQLite database
   (its schema, created by starting its worker once; rows inserted with SQL, its FTS5
   triggers index them): one summary per 20 observations, one prompt per 10, over
   `PROJECTS`, realistic engineering text (`_Text`) drawn from `TOPICS`.
2. Vectors (cmem only; claude-mem runs without Chroma, as it does wherever `uvx` is not
   installed): the bundled model embeds each topic's text once, and a row's vector is its
   topic's vector plus a little noise, normalised. Embedding 100k rows one by one would
   take most of an hour here; what a search costs depends on how many vectors there are
   and on their neighbours being real (so hybrid fuses two lists), not on every row having
   its own sentence. The query is embedded by the real model on every search (its LRU
   aside).
3. Both workers run (cmem: `cmem serve`; claude-mem: its `worker-service.cjs start` with
   Bun, `CMEM_BENCH_CLAUDE_MEM` naming the folder it is installed in, as
   docs/benchmarks/search.md shows; skipped with a note when unset), each
   answers every query once to warm up, then `--runs` rounds (default 20): in each, every
   query of `QUERIES` on each surface, claude-mem then cmem, on one keep-alive connection
   each.

Surfaces (`SURFACES`): keyword over one project (every kind), keyword over observations
only, and each system's default (claude-mem: its FTS5 search, the same request; cmem:
hybrid). Printed: medians and p99 per surface and system, and the ratio claude-mem ÷ cmem
(above 1: cmem is faster).
"""

from __future__ import annotations

import http.client
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from tests.bench import worker as worker_bench
from tests.bench.harness import (
    LiveWorker,
    bench_sizes,
    child_json,
    cmem_migrate,
    django_setup,
    free_port,
    percentile,
    scratch_dir,
    wait_health,
    worker_env,
)

PROJECTS = ["shop", "billing", "api-gateway", "infra", "mobile-app", "data-pipeline", "auth", "docs"]  # fmt: skip
COMPONENTS = [
    "redis cache", "connection pool", "checkout webhook", "payment retry queue", "session store",
    "login form", "JWT refresh token", "database migration", "orders table index",
    "celery worker", "deploy pipeline", "docker build", "nginx proxy", "rate limiter",
    "search endpoint", "email notifications", "invoice PDF export", "feature flags",
    "S3 upload", "GraphQL resolver", "React dashboard", "CSV importer", "cron scheduler",
    "logging middleware", "metrics exporter", "test fixtures", "API client", "CLI parser",
    "settings loader", "websocket gateway", "OAuth callback", "password reset",
    "audit log", "background sync", "image thumbnails", "i18n catalog", "config schema",
    "health check", "retry decorator", "pagination helper",
]  # fmt: skip
PROBLEMS = [
    ("times out under load", "bugfix"), ("leaks memory after a deploy", "bugfix"),
    ("returns stale data", "bugfix"), ("fails on unicode input", "bugfix"),
    ("deadlocks during concurrent writes", "bugfix"), ("was refactored into a service", "refactor"),
    ("gained structured logging", "feature"), ("now validates its input", "feature"),
    ("was split into smaller modules", "refactor"), ("is documented for new contributors", "change"),
    ("switched to async I/O", "change"), ("reads its limits from settings", "change"),
    ("is covered by integration tests", "change"), ("keeps a bounded LRU cache", "feature"),
    ("moved behind a feature flag", "decision"), ("uses exponential backoff", "decision"),
    ("was profiled: serialisation dominates", "discovery"),
    ("drops events when the queue is full", "discovery"),
    ("double-charges on a retried request", "bugfix"), ("is slow on large tenants", "discovery"),
]  # fmt: skip
DETAILS = [
    "The root cause was a missing index on {col}.", "Raised the timeout from {n}s to {m}s.",
    "Added a regression test that reproduces the failure with {n} parallel clients.",
    "The fix wraps the write in a transaction and retries on conflict.",
    "Profiling showed {n}% of the time in JSON encoding.", "Renamed {col} to {col}_at for clarity.",
    "The old code path is kept behind a flag until the next release.",
    "Errors are now logged with the request id and tenant.",
    "Batching the inserts by {n} cut the latency by half.",
    "The cache key now includes the tenant and the locale.",
    "A stale connection from the pool caused the intermittent failure.",
    "The migration backfills {n} thousand rows in chunks.",
    "Reviewed with the team; we chose the simpler approach.",
    "The staging environment reproduced it only with production settings.",
]  # fmt: skip
COLUMNS = ["created", "updated", "user_id", "order_id", "tenant_id", "status", "expires"]
FILES = ["models.py", "views.py", "services.py", "tasks.py", "api.py", "settings.py", "tests/test_api.py"]  # fmt: skip
# What an agent asks its memory. claude-mem searches its text as one quoted phrase (its
# SessionSearch quotes the query whole), so each is a phrase the rows hold: both systems
# answer with rows (`_hits` checks it); cmem matches the words, a superset of the phrase.
QUERIES = [
    "redis cache",
    "connection pool",
    "checkout webhook",
    "database migration",
    "timeout",
    "stale connection",
    "deploy",
    "exponential backoff",
]


@dataclass(frozen=True)
class Surface:
    label: str
    claude_mem: str  # path of claude-mem's request, its query parameter is `query`
    claude_mem_params: dict[str, str]
    cmem_params: dict[str, str]
    # Every request a text never asked before (`fresh_texts`): cmem embeds each query
    # (its LRU of query vectors never answers), where QUERIES repeat round after round.
    fresh: bool = False


def _surfaces() -> list[Surface]:
    project = PROJECTS[0]
    return [
        Surface(
            "keyword, one project",
            "/api/search",
            {"project": project},
            {"project": project, "mode": "keyword"},
        ),
        Surface(
            "keyword, observations only",
            "/api/search/observations",
            {},
            {"kind": "observation", "mode": "keyword"},
        ),
        Surface(
            "one project, each default (cmem hybrid)",
            "/api/search",
            {"project": project},
            {"project": project, "mode": "hybrid"},
        ),
        Surface(
            "one project, each default, every text new",
            "/api/search",
            {"project": project},
            {"project": project, "mode": "hybrid"},
            fresh=True,
        ),
    ]


def fresh_texts() -> list[str]:
    """Phrases the rows hold ("redis cache times out"), each asked once, in a seeded order."""
    texts = [
        f"{component} {' '.join(problem.split()[:2])}"
        for component in COMPONENTS
        for problem, _ in PROBLEMS
    ]
    random.Random(5).shuffle(texts)
    return texts


class _Text:
    """The rows both systems get, the same for a size whoever asks (one seeded random)."""

    def __init__(self) -> None:
        self.rng = random.Random(33)

    def topic(self) -> int:
        return self.rng.randrange(len(COMPONENTS) * len(PROBLEMS))

    def detail(self) -> str:
        n, m = self.rng.randrange(2, 90), self.rng.randrange(90, 300)
        return self.rng.choice(DETAILS).format(n=n, m=m, col=self.rng.choice(COLUMNS))

    def observation(self, i: int) -> dict[str, Any]:
        topic = self.topic()
        component, (problem, kind) = (
            COMPONENTS[topic // len(PROBLEMS)],
            PROBLEMS[topic % len(PROBLEMS)],
        )
        project = PROJECTS[i % len(PROJECTS)]
        folder = component.split()[-1].lower()
        return {
            "topic": topic,
            "project": project,
            "type": kind,
            "title": f"The {component} {problem}",
            "subtitle": f"{component} in {project}: {self.detail()}",
            "narrative": " ".join(self.detail() for _ in range(4)),
            "facts": [self.detail() for _ in range(3)],
            "concepts": [folder, kind],
            "files": [f"src/{folder}/{self.rng.choice(FILES)}"],
        }

    def summary(self) -> dict[str, Any]:
        topic = self.topic()
        component = COMPONENTS[topic // len(PROBLEMS)]
        return {
            "topic": topic,
            "request": f"Look into the {component}",
            "learned": " ".join(self.detail() for _ in range(3)),
            "completed": f"The {component} {PROBLEMS[topic % len(PROBLEMS)][0]}. {self.detail()}",
        }

    def prompt(self) -> dict[str, Any]:
        topic = self.topic()
        component = COMPONENTS[topic // len(PROBLEMS)]
        return {
            "topic": topic,
            "text": f"can you check why the {component} {PROBLEMS[topic % len(PROBLEMS)][0]}?",
        }


def topic_text(topic: int) -> str:
    component, (problem, _) = COMPONENTS[topic // len(PROBLEMS)], PROBLEMS[topic % len(PROBLEMS)]
    return f"The {component} {problem}"


START = datetime(2026, 1, 1, tzinfo=UTC)


def rows(size: int) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """(kind, n, row) in creation order: observations, with a summary every 20th and a prompt
    every 10th; row n of a kind is created n minutes (observations) after START."""
    text = _Text()
    for i in range(size):
        yield "observation", i, text.observation(i)
        if i % 10 == 0:
            yield "prompt", i // 10, text.prompt()
        if i % 20 == 0:
            yield "summary", i // 20, text.summary()


def _session_of(kind: str, n: int, row: dict[str, Any], sessions: int) -> int:
    return (n if kind == "observation" else n * (10 if kind == "prompt" else 20)) % sessions


# -- cmem ---------------------------------------------------------------------------------


def child_seed(size: int) -> dict[str, Any]:
    """Seed this (child) process's data dir: rows, then vectors (topic vector plus noise)."""
    django_setup()
    # after django.setup(), in the child: these import Django models and the model
    import numpy as np

    from memory.models import Embedding, Observation, Prompt, Session, Summary
    from memory.retrieval.embeddings.model import get_model

    began = time.perf_counter()
    sessions = [
        Session(session_id=f"versus-{s}", project=PROJECTS[s % len(PROJECTS)], started=START)
        for s in range(max(8, size // 200))
    ]
    Session.objects.bulk_create(sessions, batch_size=2000)
    made: dict[str, list[tuple[int, Any]]] = {"observation": [], "summary": [], "prompt": []}
    for kind, n, row in rows(size):
        session = sessions[_session_of(kind, n, row, len(sessions))]
        created = START + timedelta(
            minutes=n * {"observation": 1, "prompt": 10, "summary": 20}[kind]
        )
        if kind == "observation":
            obj: Any = Observation(
                session=session, project=row["project"], type=row["type"], title=row["title"],
                subtitle=row["subtitle"], narrative=row["narrative"], facts=row["facts"],
                concepts=row["concepts"], files_modified=row["files"], created=created,
            )  # fmt: skip
        elif kind == "summary":
            obj = Summary(
                session=session, project=session.project, request=row["request"],
                learned=row["learned"], completed=row["completed"], created=created,
            )  # fmt: skip
        else:
            obj = Prompt(session=session, number=n + 1, text=row["text"], created=created)
        made[kind].append((row["topic"], obj))
    for kind, model_class in (
        ("observation", Observation),
        ("summary", Summary),
        ("prompt", Prompt),
    ):
        model_class.objects.bulk_create([obj for _, obj in made[kind]], batch_size=5000)
    seeded = time.perf_counter() - began

    model = get_model()
    topics = len(COMPONENTS) * len(PROBLEMS)
    began = time.perf_counter()
    topic_vectors = np.asarray(
        model.embed([topic_text(t) for t in range(topics)]), dtype=np.float32
    )
    embedded = time.perf_counter() - began
    noise = np.random.default_rng(33)
    for kind, pairs in made.items():
        for begin in range(0, len(pairs), 5000):
            chunk = pairs[begin : begin + 5000]
            vectors = topic_vectors[[topic for topic, _ in chunk]]
            vectors = vectors + noise.standard_normal(vectors.shape).astype(np.float32) * 0.02
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            Embedding.objects.bulk_create(
                [
                    Embedding(
                        kind=kind,
                        object_id=obj.pk,
                        model=model.version,
                        vector=vec.astype(np.float16).tobytes(),
                    )
                    for (_, obj), vec in zip(chunk, vectors, strict=True)
                ]  # fmt: skip
            )
    return {"seed_s": seeded, "embed_topics_s": embedded, "topics": topics}


def child_profile(size: int) -> dict[str, float]:
    """CPU ms of each stage of a hybrid search over one project, the median over QUERIES
    (process CPU time: the encoder's and BLAS's threads count), in this (child) process on
    the seeded data dir: what bounds the hybrid figure. `size` only labels the output."""
    django_setup()
    # after django.setup(), in the child: these import Django models and the model
    from dataclasses import replace

    from memory.retrieval.search import hybrid, sqlite
    from memory.retrieval.search.query import Kind, SearchQuery

    backend = sqlite.SqliteBackend()

    def query(text: str) -> SearchQuery:
        return SearchQuery(text=text, project=PROJECTS[0], mode="hybrid", limit=20)

    vectors = {text: hybrid.embedded_text(text) for text in QUERIES}
    keyword = {text: backend.keyword_ranked(replace(query(text), limit=50))[0] for text in QUERIES}
    semantic = {
        text: hybrid.semantic_ranked(backend, query(text), 50, keyword[text], vectors[text])
        for text in QUERIES
    }

    def nearest(kind: Kind) -> Any:
        return lambda text: sqlite.nearest(kind, query(text), *vectors[text], 50, [])

    stages = {
        "hybrid search, whole (query vector from the LRU)": lambda text: hybrid.search_mode(
            backend, query(text)
        ),
        "keyword list, 50 deep": lambda text: backend.keyword_ranked(
            replace(query(text), limit=50)
        ),
        "embedding the query (the model, no LRU)": lambda text: hybrid.get_model().embed([text]),
        "nearest observations, 50": nearest("observation"),
        "nearest summaries, 50": nearest("summary"),
        "nearest prompts, 50": nearest("prompt"),
        "semantic list: 3 kinds, weighted by currency": lambda text: hybrid.semantic_ranked(
            backend, query(text), 50, keyword[text], vectors[text]
        ),
        "significance (z over the noise sample)": lambda text: hybrid.significant(
            semantic[text], vectors[text]
        ),
        "term coverage of the keyword head": lambda text: backend.term_coverage(
            [(kind, pk) for _, kind, pk in keyword[text][:3]], text
        ),
        "the page's 20 rows, read and highlighted": lambda text: backend.hits_by_ids(
            keyword[text][:20], text
        ),
    }
    out: dict[str, float] = {}
    for label, stage in stages.items():
        for text in QUERIES:
            stage(text)  # warm: the page cache, the vector copy, the model
        took = []
        for _ in range(5):
            for text in QUERIES:
                began = time.process_time()
                stage(text)
                took.append((time.process_time() - began) * 1000)
        out[label] = percentile(took, 0.5)
    return out


# -- claude-mem -----------------------------------------------------------------------------


def _claude_mem_env(install: Path, home: Path, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_MEM_", "CMEM_"))}
    env.pop("NODE_EXTRA_CA_CERTS", None)  # ~110 ms on every node start where it is set
    env.update(
        HOME=str(home), PATH=f"{install / 'node_modules' / '.bin'}:{env.get('PATH', '')}",
        CLAUDE_PLUGIN_ROOT=str(install / "node_modules" / "claude-mem" / "plugin"),
        CLAUDE_MEM_WORKER_PORT=str(port), CLAUDE_MEM_WORKER_HOST="127.0.0.1",
        CLAUDE_MEM_CHROMA_ENABLED="false", CLAUDE_MEM_TELEMETRY="0", DO_NOT_TRACK="1",
        ANTHROPIC_BASE_URL="http://127.0.0.1:9",
    )  # fmt: skip
    return env


def _claude_mem(env: dict[str, str], command: str) -> None:
    root = Path(env["CLAUDE_PLUGIN_ROOT"]) / "scripts"
    subprocess.run(
        ["node", str(root / "bun-runner.js"), str(root / "worker-service.cjs"), command],
        env=env, cwd=env["HOME"], check=True, timeout=120, capture_output=True,
    )  # fmt: skip


@contextmanager
def claude_mem_worker(env: dict[str, str]) -> Iterator[int]:
    _claude_mem(env, "start")
    port = int(env["CLAUDE_MEM_WORKER_PORT"])
    try:
        if not wait_health(f"http://127.0.0.1:{port}", 60):
            raise RuntimeError("claude-mem's worker did not answer /api/health in 60 s")
        yield port
    finally:
        _claude_mem(env, "stop")


def _claude_mem_pid(port: int) -> int:
    """The pid claude-mem's worker reports in its health answer (its process tree is measured)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=5) as response:
        return int(json.loads(response.read())["pid"])


def seed_claude_mem(db: Path, size: int) -> float:
    """The rows of `rows(size)` in claude-mem's tables (its triggers fill its FTS5 index)."""
    began = time.perf_counter()
    conn = sqlite3.connect(db)
    sessions = max(8, size // 200)
    epoch = int(START.timestamp() * 1000)
    with conn:
        conn.executemany(
            "INSERT INTO sdk_sessions (content_session_id, memory_session_id, project, "
            "started_at, started_at_epoch, status) VALUES (?, ?, ?, ?, ?, 'completed')",
            [(f"versus-{s}", f"versus-{s}", PROJECTS[s % len(PROJECTS)], START.isoformat(), epoch)
             for s in range(sessions)],
        )  # fmt: skip
        ids = dict(conn.execute("SELECT content_session_id, id FROM sdk_sessions"))
        observations, summaries, prompts = [], [], []
        for kind, n, row in rows(size):
            s = _session_of(kind, n, row, sessions)
            minutes = n * {"observation": 1, "prompt": 10, "summary": 20}[kind]
            at = START + timedelta(minutes=minutes)
            stamp = (at.isoformat(), epoch + minutes * 60_000)
            if kind == "observation":
                observations.append(
                    (f"versus-{s}", row["project"], row["type"], row["title"], row["subtitle"],
                     json.dumps(row["facts"]), row["narrative"], json.dumps(row["concepts"]),
                     "[]", json.dumps(row["files"]), *stamp)
                )  # fmt: skip
            elif kind == "summary":
                summaries.append(
                    (f"versus-{s}", PROJECTS[s % len(PROJECTS)], row["request"], row["learned"], row["completed"], *stamp)
                )  # fmt: skip
            else:
                prompts.append((ids[f"versus-{s}"], f"versus-{s}", n + 1, row["text"], *stamp))
        conn.executemany(
            "INSERT INTO observations (memory_session_id, project, type, title, subtitle, facts, "
            "narrative, concepts, files_read, files_modified, created_at, created_at_epoch) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            observations,
        )
        conn.executemany(
            "INSERT INTO session_summaries (memory_session_id, project, request, learned, "
            "completed, created_at, created_at_epoch) VALUES (?, ?, ?, ?, ?, ?, ?)",
            summaries,
        )
        conn.executemany(
            "INSERT INTO user_prompts (session_db_id, content_session_id, prompt_number, "
            "prompt_text, created_at, created_at_epoch) VALUES (?, ?, ?, ?, ?, ?)",
            prompts,
        )
    conn.close()
    return time.perf_counter() - began


# -- measuring ------------------------------------------------------------------------------


TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")


def _cpu_ms(pids: list[int]) -> float:
    """User + system CPU time of these processes (all their threads), in ms."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total * TICK_MS


class _Client:
    """One keep-alive connection to a worker whose processes are `pids`; `get` returns the
    wall time in ms (status checked) and adds the CPU time the worker spent meanwhile to
    `cpu`: on a shared machine wall time measures the queue for a core too, the CPU time
    what answering cost (summed over many requests: /proc counts in clock ticks)."""

    def __init__(self, port: int, headers: dict[str, str], root: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.headers = headers
        self.pids = worker_bench._tree(root)
        self.cpu = 0.0

    def _answer(self, path: str, params: dict[str, str]) -> tuple[int, bytes]:
        """One GET; a connection the worker closed while idle is opened again, once, as
        any HTTP client does (cmem's server drops idle keep-alive connections)."""
        for attempt in (1, 2):
            try:
                self.conn.request("GET", f"{path}?{urlencode(params)}", headers=self.headers)
                response = self.conn.getresponse()
                return response.status, response.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.conn.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def get(self, path: str, params: dict[str, str]) -> float:
        cpu = _cpu_ms(self.pids)
        began = time.perf_counter()
        status, body = self._answer(path, params)
        elapsed = (time.perf_counter() - began) * 1000
        self.cpu += _cpu_ms(self.pids) - cpu
        if status != 200:
            raise RuntimeError(f"{path} answered {status}: {body[:300]!r}")
        return elapsed

    def hits(self, path: str, params: dict[str, str]) -> int:
        """How many rows the answer lists: cmem's `results`; claude-mem's "Found N" line."""
        found = json.loads(self._answer(path, params)[1])
        if "results" in found:
            return len(found["results"])
        count = re.search(r"Found (\d+)", found["content"][0]["text"])
        return int(count.group(1)) if count else 0


def _hits(cm: _Client | None, cmem: _Client) -> dict[str, tuple[float, float]]:
    """Mean rows answered per query, per surface: (claude-mem, cmem)."""
    counts = {}
    for surface in _surfaces():
        theirs = mine = 0
        # The new texts are kept for the timed rounds: counted on the repeated ones.
        for text in QUERIES:
            if cm is not None:
                theirs += cm.hits(
                    surface.claude_mem, {"query": text, "limit": "20", **surface.claude_mem_params}
                )
            mine += cmem.hits("/api/search", {"q": text, "limit": "20", **surface.cmem_params})
        counts[surface.label] = (theirs / len(QUERIES), mine / len(QUERIES))
    return counts


def _measure(
    cm: _Client | None, cmem: _Client, runs: int
) -> tuple[dict[str, dict[str, list[float]]], dict[str, tuple[float, float]]]:
    """Wall times per surface and system, and the mean CPU ms per search (claude-mem, cmem)."""
    times: dict[str, dict[str, list[float]]] = {}
    cpu: dict[str, tuple[float, float]] = {}
    surfaces = _surfaces()
    fresh = iter(fresh_texts())
    for warm in (True, False):
        for _ in range(1 if warm else runs):
            for surface in surfaces:
                got = times.setdefault(surface.label, {"claude-mem": [], "cmem": []})
                texts = [next(fresh) for _ in QUERIES] if surface.fresh else QUERIES
                theirs_before, mine_before = cm.cpu if cm else 0.0, cmem.cpu
                for text in texts:
                    if cm is not None:
                        took = cm.get(
                            surface.claude_mem,
                            {"query": text, "limit": "20", **surface.claude_mem_params},
                        )
                        if not warm:
                            got["claude-mem"].append(took)
                    took = cmem.get(
                        "/api/search", {"q": text, "limit": "20", **surface.cmem_params}
                    )
                    if not warm:
                        got["cmem"].append(took)
                if not warm:
                    theirs, mine = cpu.get(surface.label, (0.0, 0.0))
                    cpu[surface.label] = (
                        theirs + ((cm.cpu if cm else 0.0) - theirs_before) / (runs * len(texts)),
                        mine + (cmem.cpu - mine_before) / (runs * len(texts)),
                    )
    return times, cpu


def _one_size(size: int, runs: int, install: Path | None, out: Any) -> tuple[list[str], list[str]]:
    """The table's rows at `size`, and the notes (the hybrid profile) to print after it."""
    with scratch_dir("cmem-bench-versus-") as work:
        data = work / "data"
        env = worker_env(
            data,
            free_port(),
            CLAUDE_MEM_COMPRESSOR="offline",
            DJANGO_SETTINGS_MODULE="cmem_site.settings",
        )
        cmem_migrate(env)
        seeded = child_json("tests.bench.versus", env, "seed", str(size), timeout=3600)
        out.write(
            f"cmem: seeded {size:,} observations in {seeded['seed_s']:.0f} s; "
            f"{seeded['topics']} topic texts embedded in {seeded['embed_topics_s']:.1f} s"
        )
        cm_env = None
        if install is not None:
            home = work / "cm-home"
            home.mkdir()
            cm_env = _claude_mem_env(install, home, free_port())
            with claude_mem_worker(cm_env):
                pass  # its first start creates and migrates its database
            took = seed_claude_mem(home / ".claude-mem" / "claude-mem.db", size)
            out.write(f"claude-mem: seeded in {took:.0f} s")
        live = LiveWorker(data_dir=data, port=int(env["CLAUDE_MEM_WORKER_PORT"]), env=env,
                          cmem=str(Path(sys.executable).with_name("cmem")))  # fmt: skip
        live.start(120)
        try:
            secret = (data / "worker.secret").read_text().strip()
            assert live.proc is not None
            cmem = _Client(live.port, {"Authorization": f"Bearer {secret}"}, live.proc.pid)
            if cm_env is None:
                hits, (times, cpu) = _hits(None, cmem), _measure(None, cmem, runs)
            else:
                with claude_mem_worker(cm_env) as port:
                    cm = _Client(port, {}, _claude_mem_pid(port))
                    hits, (times, cpu) = _hits(cm, cmem), _measure(cm, cmem, runs)
        finally:
            live.stop()
        profile = child_json("tests.bench.versus", env, "profile", str(size), timeout=1800)
    load = os.getloadavg()
    lines = []
    for label, got in times.items():
        mine = got["cmem"]
        line = f"| {size:,} | {label} | "
        if got["claude-mem"]:
            theirs = got["claude-mem"]
            ratio = percentile(theirs, 0.5) / percentile(mine, 0.5)
            line += f"{percentile(theirs, 0.5):.2f} / {percentile(theirs, 0.99):.2f} ms | "
        else:
            ratio, line = 0.0, line + "not run | "
        line += f"{percentile(mine, 0.5):.2f} / {percentile(mine, 0.99):.2f} ms | "
        line += f"{ratio:.2f} |" if ratio else "|"
        theirs_cpu, mine_cpu = cpu[label]
        line += f" {theirs_cpu:.2f} / {mine_cpu:.2f} ms |"
        line += f" {theirs_cpu / mine_cpu:.2f} |" if theirs_cpu and mine_cpu else " |"
        theirs_hits, mine_hits = hits[label]
        lines.append(line + f" {theirs_hits:.1f} / {mine_hits:.1f} | {load[0]:.1f} |")
    notes = [f"CPU per stage of a hybrid search over one project at {size:,} (median, ms):"]
    notes += [f"- {label}: {ms:.2f}" for label, ms in profile.items()]
    return lines, notes


def run(*, out: Any, options: dict[str, Any]) -> None:
    runs = options.get("runs") or 20
    raw = os.environ.get("CMEM_BENCH_CLAUDE_MEM")
    install = Path(raw) if raw else None
    if install is None:
        out.write(
            "claude-mem: not measured (set CMEM_BENCH_CLAUDE_MEM to the folder claude-mem 13.25.3 "
            "and bun are installed in: docs/benchmarks/search.md); cmem only"
        )
    elif not (install / "node_modules" / "claude-mem").is_dir() or not shutil.which("node"):
        raise SystemExit(
            f"CMEM_BENCH_CLAUDE_MEM={install}: no node_modules/claude-mem there, or no node"
        )
    out.write(
        f"{len(QUERIES)} queries x {runs} rounds per surface, interleaved claude-mem then cmem, "
        "limit 20, keep-alive connections. Medians / p99; ratio = claude-mem ÷ cmem (above 1: cmem faster)."
    )
    table = [
        "| observations | search | claude-mem p50 / p99 | cmem p50 / p99 | ratio | CPU per search (claude-mem / cmem) | CPU ratio | rows answered (claude-mem / cmem) | load |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    notes: list[str] = []
    for size in bench_sizes(options):
        rows, about = _one_size(size, runs, install, out)
        table += rows
        notes += about
    for line in [*table, "", *notes]:
        out.write(line)


if __name__ == "__main__":
    if sys.argv[1:2] == ["seed"]:
        print(json.dumps(child_seed(int(sys.argv[2]))))
    elif sys.argv[1:2] == ["profile"]:
        print(json.dumps(child_profile(int(sys.argv[2]))))
    else:
        subprocess.run([sys.executable, "-m", "tests.bench", "versus", *sys.argv[1:]], check=True)
