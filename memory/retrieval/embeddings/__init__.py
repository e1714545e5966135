"""Embeddings: the bundled static model, vectors stored next to their rows, nearest-row scans."""

from __future__ import annotations

import os

# A search is one matrix-vector product: memory-bound, and on a small shared machine
# OpenBLAS's worker threads spin against each other (measured: 10k rows x 256 took 32 ms
# threaded, 3.5 ms on one thread, at load 8 on 2 cores). numpy reads this once, at import;
# cmem imports numpy only through this package.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from typing import Literal

# The row kinds that carry vectors: the same three the search service knows (search imports
# this package, so this package does not import search back).
Kind = Literal["observation", "summary", "prompt"]
KINDS: tuple[Kind, ...] = ("observation", "summary", "prompt")
