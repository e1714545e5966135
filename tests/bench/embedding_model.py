"""`python -m tests.bench embedding_model`: what the bundled sentence encoder costs.

Measured in this process, on the model as the worker configures it (one inference thread):
1. load: seconds to a usable model, and resident memory before and after (/proc);
2. query embedding: p50 and p90 over distinct queries never embedded before in this process
   (the recall set's and the public set's question texts), so no cache can help;
3. backfill: rows a second over rows of exactly 128 tokens (made of the recall set's own
   observation texts), one row at a time as the sweep embeds them;
4. install: what the embeddings extra adds (its packages' files as their RECORD lists them,
   in this environment) and the model's files in cmem's wheel.
"""

from __future__ import annotations

import gzip
import json
import os
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from memory.retrieval import embeddings
from tests.bench.harness import percentile

if not embeddings.available():
    raise ModuleNotFoundError(embeddings.unavailable_note())

DATA = Path(__file__).parent / "data"
# The extra's own packages and what they bring that a plain install lacks.
EXTRA = ("onnxruntime", "numpy", "sqlite-vec", "protobuf", "flatbuffers")


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _installed_mb(name: str) -> float:
    try:
        files = metadata.files(name) or []
    except metadata.PackageNotFoundError:
        return 0.0
    return sum(f.size or 0 for f in files) / 1e6


def _texts() -> tuple[list[str], list[str]]:
    with gzip.open(DATA / "recall.json.gz", "rt", encoding="utf-8") as f:
        recall = json.load(f)
    with gzip.open(DATA / "public_recall.json.gz", "rt", encoding="utf-8") as f:
        public = json.load(f)
    queries = list(
        dict.fromkeys(
            [q["text"] for q in recall["queries"]] + [q["text"] for q in public["queries"]]
        )
    )
    rows = ["\n".join(p for p in (o["title"], o["narrative"]) if p) for o in recall["observations"]]
    return queries, rows


def run(*, out: Any, options: dict[str, Any]) -> None:
    # Django is not needed: the model is read from cmem's files only.
    from memory.retrieval.embeddings import transformer

    before = _rss_mb()
    began = time.perf_counter()
    model = transformer.load()
    loaded = time.perf_counter() - began
    model.embed(["warm the session up"])
    after = _rss_mb()
    queries, rows = _texts()
    count = options.get("runs") or 400
    load = os.getloadavg()[0]
    out.write(
        f"model {model.version} ({model.dim} dimensions), one inference thread, "
        f"load average {load:.1f} on {os.cpu_count()} CPUs"
    )
    out.write(
        f"load: {loaded:.2f} s; resident memory {before:.0f} -> {after:.0f} MB (+{after - before:.0f})"
    )

    timings = []
    for text in queries[:count]:
        began = time.perf_counter()
        model.embed([text])
        timings.append((time.perf_counter() - began) * 1000)
    out.write(
        f"query embedding, {len(timings)} distinct queries: p50 {percentile(timings, 0.5):.1f} ms, "
        f"p90 {percentile(timings, 0.9):.1f} ms (target: p50 <= 15 ms)"
    )

    # Rows of exactly 128 tokens, [CLS] and [SEP] included: the recall set's texts joined
    # and cut at token boundaries.
    words = model.tokenizer
    stream: list[int] = []
    for text in rows:
        stream += words.encode(text)[1:-1]
        if len(stream) > 126 * 300:
            break
    pieces = [stream[i : i + 126] for i in range(0, len(stream) - 126, 126)][:300]
    # the extra is installed (checked at import)
    import numpy as np

    began = time.perf_counter()
    for piece in pieces:
        ids = np.array([[words.cls, *piece, words.sep]], dtype=np.int64)
        model.session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
    rate = len(pieces) / (time.perf_counter() - began)
    out.write(
        f"backfill: {rate:.0f} rows/s at 128 tokens a row ({len(pieces)} rows, one thread; "
        "target >= 30 rows/s)"
    )

    sizes = {name: _installed_mb(name) for name in EXTRA}
    model_mb = sum(p.stat().st_size for p in transformer.DATA.iterdir() if p.is_file()) / 1e6
    parts = ", ".join(f"{name} {mb:.1f}" for name, mb in sizes.items())
    out.write(
        f"install: the extra's packages {sum(sizes.values()):.0f} MB ({parts}); "
        f"the model's files in cmem's wheel {model_mb:.0f} MB; together "
        f"{sum(sizes.values()) + model_mb:.0f} MB (target <= +150 MB)"
    )
