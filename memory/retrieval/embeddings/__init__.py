"""Embeddings: the bundled sentence encoder, vectors stored next to their rows, nearest-row scans.

ONNX Runtime and numpy come with the `embeddings` extra (about 135 MB: ONNX Runtime 73 MB,
numpy and its OpenBLAS 59 MB; the model's 23 MB ship in cmem's wheel), kept out of the
runtime set so that a plain install stays small. Without it `available()` is false: search answers by keyword and says
so (API `mode`/`note`, MCP, `cmem search`, the search page), nothing is embedded, prompt-time
recall stays quiet, and `cmem doctor`/`status` name the missing packages.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
import time

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
# Each kind's table; every one has a `session_id`, through which team mode scopes by owner.
TABLES: dict[Kind, str] = {
    "observation": "memory_observation",
    "summary": "memory_summary",
    "prompt": "memory_prompt",
}

# What the bundled model needs at run time (memory/retrieval/embeddings/model.py).
REQUIRED = ("numpy", "onnxruntime")
INSTALL_HINT = (
    "install the embeddings extra into cmem's environment (`uv tool install 'cmemory[embeddings]'`, "
    "`pipx install 'cmemory[embeddings]'`, or from a checkout `make run EXTRAS=embeddings`)"
)


@functools.cache
def missing() -> tuple[str, ...]:
    """The packages of the embeddings extra that are not installed (found without importing)."""
    return tuple(name for name in REQUIRED if importlib.util.find_spec(name) is None)


def installed() -> bool:
    """The embeddings extra is installed: rows can be embedded."""
    return not missing()


# Why search by meaning cannot answer right now, though installed, by what stops it: the
# encoder process did not answer (for a short while: the next search after it tries again),
# an on-disk copy of the vectors being built (until it is). Searches meanwhile answer by
# keyword at once, rather than each waiting on what failed, and their note says why.
_unavailable: dict[str, tuple[str, float | None]] = {}
_unavailable_lock = threading.Lock()


def set_unavailable(key: str, reason: str, seconds: float | None = None) -> None:
    """Search by meaning is off because of `key` (`reason`), for `seconds` or until cleared."""
    until = None if seconds is None else time.monotonic() + seconds
    with _unavailable_lock:
        _unavailable[key] = (reason, until)


def clear_unavailable(key: str) -> None:
    with _unavailable_lock:
        _unavailable.pop(key, None)


def _transient() -> str:
    now = time.monotonic()
    with _unavailable_lock:
        for key, (reason, until) in list(_unavailable.items()):
            if until is not None and now >= until:
                del _unavailable[key]
                continue
            return reason
    return ""


def available() -> bool:
    """Search by meaning can answer now: installed, and nothing transient stops it."""
    return installed() and not _transient()


def unavailable_note() -> str:
    """One sentence for every surface that would have searched by meaning; "" when it can."""
    if missing():
        return (
            f"search by meaning is off ({', '.join(missing())} not installed), so search answers "
            f"by keyword; for meaning, {INSTALL_HINT}"
        )
    return _transient()
