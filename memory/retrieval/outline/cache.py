"""Outlines kept by content hash, for the read gate's refusal.

A refusal that carries the file's outline saves the model the smart_outline call (a whole
request that resends the conversation), but parsing costs 3-5 ms for a 16-20 KB file, more
than the whole gate decision may take. So the gate never parses: it asks this
cache by the file's sha256 (which it computes anyway), and on a miss asks for the outline
to be made in the background and refuses with the plain text. The worker also warms the
cache when it records what a Read, Edit or Write left the model holding (file_views), so
by the time a later session is refused the outline of the file as it was then is here.

Keyed by content hash, the entry can never be stale: a changed file has another hash. The
rendered text has no path in it (Outline.render), so two copies of one file share it.
In memory only, per process, bounded: a restart starts cold and warms again.

The background parse waits until no hook request is in flight (and none came for a few
ms; memory/runtime/foreground.py): it is Python and tree-sitter holding the interpreter lock for 1-5 ms,
and a request thread wanting the lock back after each SQLite call waited for it. Measured
in-process, back-to-back refusals of files not outlined yet (`python -m tests.bench lean`'s gate row):
~1 ms of each decision's wall time was this wait. Between an agent's tool calls (seconds
apart) the outline is made as soon as before.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from memory.retrieval.outline.languages import language_for
from memory.retrieval.outline.model import OutlineError
from memory.retrieval.outline.parse import outline_source, read_source
from memory.runtime.foreground import quiet_wait

ENTRIES = 512
# Only files the gate refuses and that parse within a few milliseconds are worth it.
MAX_BYTES = 256 * 1024
# A text for "no useful outline" (no grammar, no symbols, unreadable): asked once per hash.
NONE = ""

_entries: OrderedDict[str, str] = OrderedDict()
_pending: dict[str, Future[None]] = {}
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def outline_cached(sha256: str) -> str | None:
    """The rendered outline of the content with this hash; NONE when it has none worth
    showing; None when it was not made yet."""
    with _lock:
        text = _entries.get(sha256)
        if text is not None:
            _entries.move_to_end(sha256)
        return text


def outline_warm(path: str, sha256: str) -> None:
    """Make the outline of `path` (whose content has `sha256`) in the background, once."""
    if not sha256 or language_for(Path(path)) is None:
        return
    global _pool
    with _lock:
        if sha256 in _entries or sha256 in _pending:
            return
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cmem-outline")
        _pending[sha256] = _pool.submit(_make, path, sha256)


def outline_drain(timeout: float = 10.0) -> None:
    """Wait for the outlines asked for so far (tests; a benchmark's warm-up)."""
    with _lock:
        waiting = list(_pending.values())
    for future in waiting:
        future.result(timeout=timeout)


def outline_forget() -> None:
    """Drop every entry (tests)."""
    outline_drain()
    with _lock:
        _entries.clear()


def _make(path: str, sha256: str) -> None:
    try:
        quiet_wait()
        text = outline_text(Path(path), sha256)
    finally:
        with _lock:
            _pending.pop(sha256, None)
    if text is None:
        return
    with _lock:
        _entries[sha256] = text
        while len(_entries) > ENTRIES:
            _entries.popitem(last=False)


def outline_text(path: Path, sha256: str) -> str | None:
    """The outline of `path` rendered, or NONE: no grammar, too big, binary, unreadable, no
    symbols; None when the content on disk is no longer the one with `sha256` (nothing is
    known about that content then)."""
    language = language_for(path)
    if language is None:
        return NONE
    try:
        source = read_source(path, MAX_BYTES)
    except OutlineError:
        return NONE
    if hashlib.sha256(source).hexdigest() != sha256:
        return None  # changed since it was hashed: this text would describe another content
    try:
        outline = outline_source(source, language=language)
    except Exception:  # noqa: BLE001 - a grammar failure only means no outline in the refusal
        return NONE
    return outline.render_brief() if outline.symbols else NONE
