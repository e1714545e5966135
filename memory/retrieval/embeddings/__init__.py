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
    "install the embeddings extra into cmem's environment (`uv tool install 'cmem[embeddings]'`, "
    "`pipx install 'cmem[embeddings]'`, or from a checkout `make run EXTRAS=embeddings`)"
)


@functools.cache
def missing() -> tuple[str, ...]:
    """The packages of the embeddings extra that are not installed (found without importing)."""
    return tuple(name for name in REQUIRED if importlib.util.find_spec(name) is None)


def installed() -> bool:
    """The embeddings extra is installed: rows can be embedded."""
    return not missing()


# Why search by meaning could not answer this thread's last search, though installed (the
# encoder process did not answer, the on-disk copy is still being built): read by the
# search's `mode_note` once its answer is ready, so kept NOTE_SECONDS at most, and cleared
# when the thread next embeds a query.
NOTE_SECONDS = 10.0
_thread = threading.local()


def note_unavailable(reason: str) -> None:
    """This thread's search could not embed its query: `reason` is its note."""
    _thread.reason, _thread.at = reason, time.monotonic()


def clear_unavailable() -> None:
    _thread.reason = ""


def _transient() -> str:
    reason = getattr(_thread, "reason", "")
    if reason and time.monotonic() - _thread.at < NOTE_SECONDS:
        return str(reason)
    return ""


def available() -> bool:
    """Search by meaning can answer now: installed, and this thread's last search met
    nothing that stopped it."""
    return installed() and not _transient()


def unavailable_note() -> str:
    """One sentence for every surface that would have searched by meaning; "" when it can."""
    if missing():
        return (
            f"search by meaning is off ({', '.join(missing())} not installed), so search answers "
            f"by keyword; for meaning, {INSTALL_HINT}"
        )
    return _transient()
