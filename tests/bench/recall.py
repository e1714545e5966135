"""`python -m tests.bench recall`: does search find what a later session means, and how fast?

The labelled set ships in the package (`data/recall.json.gz`, frozen before the embedding
model was chosen): 3,285 observations, 441 queries, each with its relevant observations.
Observations are the non-merge commits of four public projects (pallets flask, werkzeug,
click, jinja: subject, body, changed files) plus 85 written for the benchmark; queries are
those projects' own changelog entries, labelled with the commits of the pull requests and
issues each entry cites, plus 85 written questions. Groups: `file/symbol` (the query names
a code symbol or a file), `keyword` (shares a content word with a target), `paraphrase`
(shares none).

In a child process on a temporary data dir (never yours):
1. load the set, embed it through the consumer's own code (`embed_pending`): throughput;
2. split the queries: even `id` tunes, odd `id` is held out (ids run in source order, so
   each changelog and each group lands in both halves about equally; fixed, never drawn);
3. the fusion has no tuned constant (each list's weight comes from the query's own scores,
   `memory/retrieval/search/hybrid.py`), so nothing is tuned here; the tuning half is
   where fusion and model changes are tried, and only the held-out half is reported;
4. run the held-out queries in keyword, semantic and hybrid mode (no
   filters, top 10): R@5, R@10 (relevant found in the top k over min(relevant, k)) and
   MRR, per group and overall; that table is the headline, the whole set follows it;
5. pad the store to each size (default 10,000 and 100,000 observations; filler text from
   the `bench search` vocabulary, filler vectors random unit vectors, since scan cost does
   not depend on their values) and time hybrid searches: p50 and p99.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory import config
from memory.retrieval import embeddings
from memory.retrieval.search.query import Mode
from tests.bench.harness import (
    bench_sizes,
    is_bench_child,
    percentile,
    rerun_in_fresh_data_dir,
)

if not embeddings.available():
    # `cmem bench` reports a benchmark whose module cannot import as not available.
    raise ModuleNotFoundError(embeddings.unavailable_note())

DATA = Path(__file__).parent / "data" / "recall.json.gz"
MODES: tuple[Mode, ...] = ("keyword", "semantic", "hybrid")
GROUPS = ("keyword", "paraphrase", "file/symbol")


def split(queries: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(tuning, held out): even query ids tune, odd ids are held out."""
    return [q for q in queries if q["id"] % 2 == 0], [q for q in queries if q["id"] % 2 == 1]


def load_set() -> dict[str, Any]:
    with gzip.open(DATA, "rt", encoding="utf-8") as f:
        return json.load(f)


def migrated_set() -> tuple[dict[str, Any], dict[str, int]]:
    """In a benchmark's child: migrate its data dir and load the recall set into it (the set,
    and the row id of each of its observations)."""
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    data = load_set()
    return data, _seed_set(data)


def _seed_set(data: dict[str, Any]) -> dict[str, int]:
    from memory.models import Observation, Session

    start = datetime(2025, 1, 1, tzinfo=UTC)
    sessions = {
        project: Session.objects.create(
            session_id=f"bench-{project}", project=project, started=start
        )
        for project in sorted({o["project"] for o in data["observations"]})
    }
    rows = [
        Observation(
            session=sessions[o["project"]],
            project=o["project"],
            type=o["type"],
            title=o["title"],
            narrative=o["narrative"],
            files_modified=o["files_modified"],
            created=start + timedelta(minutes=i),
        )  # fmt: skip
        for i, o in enumerate(data["observations"])
    ]
    Observation.objects.bulk_create(rows, batch_size=2000)
    return {o["key"]: row.pk for o, row in zip(data["observations"], rows, strict=True)}


def score(ranked: list[int], relevant: set[int]) -> dict[str, float]:
    """R@5, R@10 (hits over min(|relevant|, k)) and reciprocal rank of one query."""
    out = {}
    for k in (5, 10):
        out[f"R@{k}"] = len(set(ranked[:k]) & relevant) / min(len(relevant), k)
    out["MRR"] = next((1.0 / (i + 1) for i, pk in enumerate(ranked) if pk in relevant), 0.0)
    return out


def _quality(
    queries: list[dict[str, Any]], ids: dict[str, int], modes: tuple[Mode, ...] = MODES
) -> dict[str, dict[str, dict[str, float]]]:
    from memory.retrieval.search.query import SearchQuery
    from memory.retrieval.search.service import search

    table: dict[str, dict[str, dict[str, float]]] = {}
    for mode in modes:
        sums: dict[str, dict[str, float]] = {}
        for q in queries:
            relevant = {ids[key] for key in q["relevant"]}
            hits = search(SearchQuery(text=q["text"], mode=mode, kinds=("observation",), limit=10))
            result = score([h.id for h in hits], relevant)
            for group in (q["group"], "all"):
                bucket = sums.setdefault(group, {"n": 0, "R@5": 0.0, "R@10": 0.0, "MRR": 0.0})
                bucket["n"] += 1
                for metric, value in result.items():
                    bucket[metric] += value
        table[mode] = {
            g: {m: (v / b["n"] if m != "n" else v) for m, v in b.items()} for g, b in sums.items()
        }
    return table


def _table(out: Any, title: str, table: dict[str, dict[str, dict[str, float]]]) -> None:
    out.write("")
    out.write(title)
    out.write("| mode | group | queries | R@5 | R@10 | MRR |")
    out.write("|---|---|---:|---:|---:|---:|")
    for mode in MODES:
        for group in (*GROUPS, "all"):
            row = table[mode].get(group)
            if row:
                out.write(
                    f"| {mode} | {group} | {int(row['n'])} | {row['R@5']:.3f} | {row['R@10']:.3f} | {row['MRR']:.3f} |"
                )


def _pad(total: int, dim: int, model: str) -> None:
    """Filler observations (and random unit vectors for them) up to `total` observations."""
    import numpy as np

    from memory.models import Embedding, Observation, Session
    from tests.bench.search import _words

    have = Observation.objects.count()
    if have >= total:
        return
    rng = random.Random(18)
    nrng = np.random.default_rng(18)
    words, weights = _words(rng)
    session = Session.objects.create(session_id=f"bench-filler-{total}", project="filler")
    start = datetime(2024, 1, 1, tzinfo=UTC)
    for begin in range(have, total, 5000):
        count = min(5000, total - begin)
        rows = Observation.objects.bulk_create(
            [
                Observation(
                    session=session,
                    project="filler",
                    type="change",
                    title=" ".join(rng.choices(words, cum_weights=weights, k=7)).capitalize(),
                    narrative=" ".join(rng.choices(words, cum_weights=weights, k=60)),
                    created=start + timedelta(seconds=begin + i),
                )  # fmt: skip
                for i in range(count)
            ]
        )
        vectors = nrng.standard_normal((count, dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        Embedding.objects.bulk_create(
            [
                Embedding(
                    kind="observation",
                    object_id=row.pk,
                    model=model,
                    vector=vec.astype(np.float16).tobytes(),
                )
                for row, vec in zip(rows, vectors, strict=True)
            ]  # fmt: skip
        )


def _latency(data: dict[str, Any], runs: int) -> dict[str, float]:
    """Keyword and hybrid searches interleaved, query by query: a change in the machine's
    load during the run weighs on both modes alike, so their ratio stays fair."""
    from memory.retrieval.search.query import SearchQuery
    from memory.retrieval.search.service import search

    texts = [q["text"] for q in data["queries"]][:: max(1, len(data["queries"]) // 60)]
    latency_modes: tuple[Mode, ...] = ("keyword", "hybrid")
    times: dict[str, list[float]] = {mode: [] for mode in latency_modes}
    cpu: dict[str, list[float]] = {mode: [] for mode in latency_modes}
    for text in texts:
        for mode in latency_modes:
            search(SearchQuery(text=text, mode=mode))  # the page cache and the vector matrix
        for _ in range(runs):
            for mode in latency_modes:
                began, began_cpu = time.perf_counter(), time.thread_time()
                search(SearchQuery(text=text, mode=mode))
                times[mode].append((time.perf_counter() - began) * 1000)
                cpu[mode].append((time.thread_time() - began_cpu) * 1000)
    out: dict[str, float] = {}
    for mode in latency_modes:
        out[f"{mode} p50"] = percentile(times[mode], 0.5)
        out[f"{mode} p99"] = percentile(times[mode], 0.99)
        # CPU time of the searching thread: the cost without the queue for a core.
        out[f"{mode} cpu p50"] = percentile(cpu[mode], 0.5)
    return out


def _child(sizes: list[int], runs: int, out: Any) -> None:
    from memory.retrieval.embeddings.model import get_model
    from memory.retrieval.embeddings.store import embed_pending

    data, ids = migrated_set()
    model = get_model()
    began, began_cpu = time.perf_counter(), time.process_time()
    embedded = embed_pending(("observation",))
    rate = embedded / (time.perf_counter() - began)
    # Process CPU (the tokenizer's own threads included) per row: what the consumer pays
    # whatever the machine's load; the wall rate divides by the share of a core it got.
    cpu_row = (time.process_time() - began_cpu) / max(embedded, 1) * 1e6
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    out.write(
        f"{len(data['observations']):,} observations, {len(data['queries'])} queries; model {model.version}; "
        f"load average {load:.1f} on {os.cpu_count()} CPUs"
    )
    out.write(
        f"embedding: {embedded:,} observations at {rate:,.0f} observations/s "
        f"({cpu_row:,.0f} µs of CPU per observation)"
    )
    _, held_out = split(data["queries"])
    _table(out, f"held out ({len(held_out)} queries; the headline):", _quality(held_out, ids))
    _table(out, f"all {len(data['queries'])} queries:", _quality(data["queries"], ids))
    out.write("")
    out.write(
        "| observations | keyword p50 | keyword p99 | hybrid p50 | hybrid p99 | keyword CPU p50 | hybrid CPU p50 | load |"
    )
    out.write("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        _pad(size, model.dim, model.version)
        lat = _latency(data, runs)
        out.write(
            f"| {size:,} | {lat['keyword p50']:.2f} ms | {lat['keyword p99']:.2f} ms | "
            f"{lat['hybrid p50']:.2f} ms | {lat['hybrid p99']:.2f} ms | "
            f"{lat['keyword cpu p50']:.2f} ms | {lat['hybrid cpu p50']:.2f} ms | {os.getloadavg()[0]:.1f} |"
        )


def run(*, out: Any, options: dict[str, Any]) -> None:
    runs = options.get("runs") or (3 if options.get("quick") else 5)
    if is_bench_child("recall"):
        _child(bench_sizes(options), runs, out)
        return
    rerun_in_fresh_data_dir("recall", options, runs)
    _ = config  # the child reads its data dir through config
