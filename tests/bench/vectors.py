"""`python -m tests.bench vectors`: the two nearest-rows indexes of SQLite search, side by side.

In a child process on a temporary data dir (never yours), like `bench recall`:
1. the recall set (3,285 observations) is stored and embedded, then padded with filler
   observations and random unit vectors to each size (default 10,000 and 100,000);
2. per size and index (`scan`, and `sqlite-vec` where this Python can load it), semantic
   and hybrid searches of the recall set's query texts are timed, unfiltered and filtered
   to one project, interleaved query by query so a change of load weighs on both alike;
   the sqlite-vec copy's first build is timed apart;
3. `auto`'s measure runs as it would on first use, and its choice is printed.
Run it under a Python that can load extensions (`.venv-ext/bin/python -m tests.bench vectors` from a
checkout: `make test` makes that venv); elsewhere only the scan is timed.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from memory.retrieval import embeddings
from memory.retrieval.search.query import Mode
from tests.bench.harness import (
    bench_sizes,
    is_bench_child,
    percentile,
    rerun_in_fresh_data_dir,
)

if not embeddings.available():
    raise ModuleNotFoundError(embeddings.unavailable_note())

INDEXES = ("scan", "sqlite-vec")
MODES: tuple[Mode, ...] = ("semantic", "hybrid")


def _use(index_name: str) -> None:
    from memory.retrieval.embeddings import vector_index

    os.environ[vector_index.SETTING] = index_name
    vector_index.clear()


def _time(texts: list[str], runs: int, indexes: list[str]) -> dict[tuple[str, str, str], float]:
    """p50/p99 (ms) per (index, mode, filter) over `runs` rounds of every text."""
    from memory.retrieval.search.query import SearchQuery
    from memory.retrieval.search.service import search

    cases = [(m, f) for m in MODES for f in ("none", "project")]
    times: dict[tuple[str, str, str], list[float]] = {
        (i, m, f): [] for i in indexes for m, f in cases
    }
    for text in texts:
        for _ in range(runs):
            for index_name in indexes:
                _use(index_name)
                for mode, filtered in cases:
                    query = SearchQuery(
                        text=text, mode=mode, project="flask" if filtered == "project" else None
                    )
                    began = time.perf_counter()
                    search(query)
                    times[(index_name, mode, filtered)].append((time.perf_counter() - began) * 1000)
    out: dict[tuple[str, str, str], float] = {}
    for (index_name, mode_name, filtered), values in times.items():
        out[(index_name, mode_name, filtered + " p50")] = percentile(values, 0.5)
        out[(index_name, mode_name, filtered + " p99")] = percentile(values, 0.99)
    return out


def _child(sizes: list[int], runs: int, out: Any) -> None:
    from memory.retrieval.embeddings import index, vec0, vector_index
    from memory.retrieval.embeddings.model import get_model
    from memory.retrieval.embeddings.store import embed_pending
    from memory.retrieval.search.query import SearchQuery
    from memory.retrieval.search.service import search
    from tests.bench.recall import _pad, migrated_set

    data, _ = migrated_set()
    embed_pending(("observation",))
    model = get_model()
    reason = vec0.unavailable_reason()
    indexes = ["scan"] if reason else list(INDEXES)
    out.write(
        f"python {sys.version.split()[0]}, sqlite {__import__('sqlite3').sqlite_version}; "
        + (f"sqlite-vec not timed: {reason}" if reason else f"sqlite-vec {vec0.version()}")
    )
    texts = [q["text"] for q in data["queries"]][:: max(1, len(data["queries"]) // 40)]
    out.write(
        "| observations | index | semantic p50 | semantic p99 | hybrid p50 | hybrid p99 "
        "| filtered semantic p50 | filtered hybrid p50 | first build | load |"
    )
    out.write("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        _pad(size, model.dim, model.version)
        builds = {"scan": 0.0, "sqlite-vec": 0.0}
        for index_name in indexes:  # first search: the matrix load, or the copy's build
            _use(index_name)
            began = time.perf_counter()
            search(SearchQuery(text=texts[0], mode="semantic"))
            builds[index_name] = time.perf_counter() - began
        lat = _time(texts, runs, indexes)
        for index_name in indexes:
            row = [lat[(index_name, m, f)] for m in MODES for f in ("none p50", "none p99")]
            filtered = [lat[(index_name, m, "project p50")] for m in MODES]
            out.write(
                f"| {size:,} | {index_name} | "
                + " | ".join(f"{v:.2f} ms" for v in row + filtered)
                + f" | {builds[index_name]:.2f} s | {os.getloadavg()[0]:.1f} |"
            )
        if not reason:  # what `auto` measures on first use (in the background there)
            count = len(index.matrix("observation", model.version, model.dim)[0])
            decided = vector_index._measure("observation", model.version, model.dim, count)
            out.write(f"auto at {size:,}: {decided.choice} ({decided.why})")


def run(*, out: Any, options: dict[str, Any]) -> None:
    runs = options.get("runs") or (2 if options.get("quick") else 3)
    if is_bench_child("vectors"):
        _child(bench_sizes(options), runs, out)
        return
    rerun_in_fresh_data_dir("vectors", options, runs)
