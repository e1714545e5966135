"""`python -m tests.bench search`: search latency at 100k observations (SQLite FTS5, the default store).

1. In a temporary data dir (never yours), a child `python -m tests.bench search` migrates and seeds
   `--size` observations (default 100,000; `--quick` 10,000) with bulk_create, plus one
   summary per 20 and one prompt per 10 observations, over 20 projects. The text is drawn
   from a Zipf-distributed vocabulary (a few hundred programming words are common, thousands
   of rarer ones), so common words match tens of thousands of rows as they would in life.
2. It runs a fixed mix of queries (common and rare words, phrases, prefixes, filters,
   questions that need the any-word fallback) `--runs` times each through
   `memory.retrieval.search.service.search` and through `GET /api/search` (Django test client: routing,
   validation and JSON included), and prints p50/p95/p99 and the slowest query.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from memory import config
from tests.bench.harness import (
    is_bench_child,
    percentile,
    rerun_in_fresh_data_dir,
    zipf_cum_weights,
)

# Folder names, as cmem derives projects from them.
PROJECTS = ["shop", "blog", "cmem", "api-gateway", "infra", "mobile-app", "billing", "search-service", "docs", "auth",
            "data-pipeline", "ml-models", "dashboard", "cli", "website", "notifications", "payments-v2", "crm", "etl", "sdk-python"]  # fmt: skip
COMMON = [
    "cache",
    "migration",
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
    "observation",
    "prompt",
    "context",
    "ledger",
    "admin",
    "template",
    "static",
    "logging",
    "metrics",
    "auth",
    "user",
    "order",
    "payment",
    "checkout",
    "invoice",
    "email",
    "webhook",
    "cron",
    "test",
    "fixture",
    "docker",
    "build",
    "release",
    "version",
    "api",
    "endpoint",
    "json",
    "serializer",
    "model",
    "view",
    "form",
    "field",
    "validation",
    "error",
    "exception",
    "traceback",
    "import",
    "module",
    "package",
    "dependency",
    "upgrade",
    "refactor",
    "rename",
    "split",
    "merge",
    "conflict",
    "branch",
    "commit",
    "review",
    "lint",
    "format",
    "type",
    "annotation",
    "async",
    "await",
    "thread",
    "process",
    "memory",
    "leak",
    "pool",
    "connection",
    "socket",
]
QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("cache", {}),
    ("connection pool", {}),
    ("redis timeout retry", {}),
    ('"connection pool"', {}),
    ("migrat*", {}),
    ("webhook", {"project": "api-gateway"}),
    ("checkout payment", {"types": ("bugfix",)}),
    ("why does the checkout webhook time out after deploy", {}),
    ("serializer validation error", {"kinds": ("observation",)}),
    ("leak", {"project": "billing", "since_days": 30}),
    ("", {"project": "blog"}),
    ("models.py", {}),
]


def add_arguments(parser: Any) -> None:  # the bench command owns the shared options
    return None


STOP = [
    "the",
    "a",
    "to",
    "of",
    "and",
    "in",
    "is",
    "for",
    "that",
    "with",
    "on",
    "it",
    "was",
    "as",
    "by",
    "this",
    "from",
    "when",
    "not",
    "be",
    "an",
    "are",
    "or",
    "after",
    "now",
    "so",
    "its",
    "but",
]


def _words(rng: random.Random) -> tuple[list[str], list[float]]:
    """Zipf over 20,000 words: stop words lead, the programming words follow (each in ~5-20%
    of observations, as a project's recurring topics are), then a long tail of rare ones."""
    syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "su", "da", "fi", "go", "ha"]
    words = STOP + list(COMMON)
    while len(words) < 20_000:
        words.append("".join(rng.choice(syllables) for _ in range(rng.randint(2, 5))))
    words = list(dict.fromkeys(words))
    return words, zipf_cum_weights(len(words))


def _seed(size: int, out: Any) -> None:
    from django.core.management import call_command

    from memory.models import Observation, Prompt, Session, Summary

    call_command("migrate", verbosity=0)
    rng = random.Random(6)
    words, weights = _words(rng)

    def text(n: int) -> str:
        return " ".join(rng.choices(words, cum_weights=weights, k=n))

    start = datetime(2026, 1, 1, tzinfo=UTC)
    sessions = Session.objects.bulk_create(
        [
            Session(session_id=f"s{i}", project=PROJECTS[i % len(PROJECTS)], started=start)
            for i in range(max(1, size // 200))
        ]
    )
    types = ["discovery", "bugfix", "feature", "change", "refactor", "decision"]
    began = time.perf_counter()
    batch: list[Observation] = []
    for i in range(size):
        session = sessions[i % len(sessions)]
        batch.append(
            Observation(
                session=session,
                project=session.project,
                type=types[i % len(types)],
                title=text(7).capitalize(),
                subtitle=text(10),
                narrative=text(60),
                facts=[text(8) for _ in range(3)],
                concepts=rng.sample(COMMON[:30], 2),
                files_modified=[
                    f"src/{rng.choice(COMMON)}/{rng.choice(['models', 'views', 'api', 'tasks'])}.py"
                ],
                created=start + timedelta(minutes=i),
            )  # fmt: skip
        )
        if len(batch) == 5000:
            Observation.objects.bulk_create(batch)
            batch = []
    Observation.objects.bulk_create(batch)
    Summary.objects.bulk_create(
        [
            Summary(
                session=sessions[i % len(sessions)],
                project=sessions[i % len(sessions)].project,
                request=text(12),
                learned=text(40),
                completed=text(30),
                created=start + timedelta(minutes=20 * i),
            )
            for i in range(size // 20)
        ],
        batch_size=5000,
    )
    Prompt.objects.bulk_create(
        [
            Prompt(
                session=sessions[i % len(sessions)],
                number=i // len(sessions) + 1,
                text=text(25),
                created=start + timedelta(minutes=10 * i),
            )
            for i in range(size // 10)
        ],
        batch_size=5000,
    )
    out.write(
        f"seeded {size:,} observations, {size // 20:,} summaries, {size // 10:,} prompts in {time.perf_counter() - began:.1f} s"
    )


def _measure(runs: int, out: Any) -> None:
    from django.db import connection
    from django.test import Client

    from memory.retrieval.search.query import SearchQuery
    from memory.retrieval.search.service import search
    from memory.runtime.credentials import OWNER_SOCKET_ENVIRON

    now = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=60)
    service: list[float] = []
    cpu: list[float] = []
    per_query: dict[str, list[float]] = {}
    for text, extra in QUERIES:
        extra = dict(extra)
        since_days = extra.pop("since_days", None)
        query = SearchQuery(
            text=text, since=now - timedelta(days=since_days) if since_days else None, **extra
        )
        search(query)  # warm the page cache once, as a running worker would be
        for _ in range(runs):
            began, began_cpu = time.perf_counter(), time.thread_time()
            search(query)
            elapsed = (time.perf_counter() - began) * 1000
            cpu.append((time.thread_time() - began_cpu) * 1000)
            service.append(elapsed)
            per_query.setdefault(f"{text!r} {extra or ''}".strip(), []).append(elapsed)
    # ALLOWED_HOSTS is loopback-only outside tests; in-process calls are the owner's, as on
    # the worker's Unix socket (memory/runtime/credentials.py).
    client = Client(HTTP_HOST="127.0.0.1", **{OWNER_SOCKET_ENVIRON: True})  # type: ignore[arg-type]  # WSGI environ extras are untyped
    http: list[float] = []
    for text, _extra in QUERIES:
        for _ in range(max(1, runs // 2)):
            began = time.perf_counter()
            response = client.get("/api/search", {"q": text, "limit": "20"})
            http.append((time.perf_counter() - began) * 1000)
            assert response.status_code == 200
    slowest = max(per_query.items(), key=lambda item: statistics.median(item[1]))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    out.write(
        f"database: {connection.vendor}, {len(QUERIES)} queries × {runs} runs, load average {load:.1f} on {os.cpu_count()} CPUs"
    )
    out.write(
        f"search service  p50 {percentile(service, 0.5):.2f} ms  p95 {percentile(service, 0.95):.2f} ms  p99 {percentile(service, 0.99):.2f} ms"
    )
    # CPU time of the searching thread: what the search costs when it is not waiting for a
    # core (on a shared, loaded machine wall time mostly measures the queue for the CPU).
    out.write(
        f"search service CPU p50 {percentile(cpu, 0.5):.2f} ms  p95 {percentile(cpu, 0.95):.2f} ms  p99 {percentile(cpu, 0.99):.2f} ms"
    )
    out.write(
        f"GET /api/search p50 {percentile(http, 0.5):.2f} ms  p95 {percentile(http, 0.95):.2f} ms  p99 {percentile(http, 0.99):.2f} ms"
    )
    out.write(f"slowest query (median): {slowest[0]} {statistics.median(slowest[1]):.2f} ms")
    for name, values in per_query.items():
        out.write(f"  {statistics.median(values):7.2f} ms  {name}")


def run(*, out: Any, options: dict[str, Any]) -> None:
    size = options.get("size") or (10_000 if options.get("quick") else 100_000)
    runs = options.get("runs") or (10 if options.get("quick") else 40)
    if is_bench_child("search"):
        seeded = config.data_dir() / f"bench-search-seeded-{size}"
        if not seeded.exists():
            _seed(size, out)
            seeded.touch()
        else:
            from django.core.management import call_command

            call_command("migrate", verbosity=0)
            out.write(f"reusing the {size:,} observations seeded in {seeded.parent}")
        _measure(runs, out)
        return
    # CMEM_BENCH_SEARCH_DIR names a data dir to keep (and reuse) between runs.
    keep = os.environ.get("CMEM_BENCH_SEARCH_DIR")
    rerun_in_fresh_data_dir("search", {"size": size}, runs, keep=keep)
