"""The embedding model: which one, run in its own process, and its version.

The default is the bundled transformer (`transformer.py`: all-MiniLM-L6-v2, int8, run by
ONNX Runtime, shipped in cmem's wheel). `CLAUDE_MEM_EMBEDDINGS_MODEL` may name a local
folder holding another sentence encoder in the same layout (`model.onnx` taking
`input_ids` and `attention_mask` and answering one pooled, normalised vector per text;
`tokenizer.json` of the WordPiece kind); when it is missing or unreadable cmem logs why and
keeps the default. Nothing is ever downloaded.

Each vector is stored with the version of the model that made it, so a model change is
caught up by the background sweep (`store.embed_pending`) and search only compares vectors
of one model.

`get_model()` answers the encoder of this process: a child process of its own
(`encoder.py`), started on the first text to embed and ended after
`CLAUDE_MEM_EMBEDDINGS_IDLE_SECONDS` without use (default 600; 0 keeps it). The model, ONNX
Runtime and the numpy it uses are about 90 MB, and only ending a process gives all of it
back (an extension module cannot be unloaded; a heap fragmented by the searches in between
keeps its pages). A watcher thread per process checks; an encoder in the middle of an
`embed` is never ended, and the next use starts it again. `transformer.load()` is the
same model in this process (tests and benches that time the model itself).
"""

from __future__ import annotations

import gc
import hashlib
import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from memory import config
from memory.retrieval.embeddings import encoder, index, transformer
from memory.retrieval.embeddings.encoder import ChildEncoder

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

DEFAULT_NAME = transformer.NAME
Model = ChildEncoder

_lock = threading.Lock()
_loaded: dict[str, Model] = {}
IDLE_SETTING = "CLAUDE_MEM_EMBEDDINGS_IDLE_SECONDS"
# When get_model last answered (monotonic seconds); the encoder keeps its own for embed.
_last_used = 0.0
_watcher: threading.Thread | None = None
_wake = threading.Event()


def configured_name() -> str:
    return config.get("CLAUDE_MEM_EMBEDDINGS_MODEL").strip()


def get_model() -> Model:
    """The configured model's encoder (its process starts on the first text to embed,
    and again after an idle end)."""
    global _last_used
    _last_used = time.monotonic()
    name = configured_name()
    model = _loaded.get(name)
    if model is not None:
        return model
    with _lock:
        if name not in _loaded:
            version = model_version()
            if name and version == transformer.VERSION:
                log.warning(
                    "CLAUDE_MEM_EMBEDDINGS_MODEL=%s cannot be loaded (no readable model.onnx "
                    "and tokenizer.json there); using the bundled %s",
                    name,
                    DEFAULT_NAME,
                )
            _loaded[name] = ChildEncoder(name, version, on_start=_started)
        return _loaded[name]


def _started() -> None:
    """An encoder process has started: the idle watch runs while one does."""
    with _lock:
        _watch()


_versions: dict[tuple[str, float, int], str] = {}


def model_version() -> str:
    """The configured model's `version`, without loading it when it is not loaded yet.

    Equal to `get_model().version`: the bundled model's is fixed with its file (a test checks
    the digest), a local folder's comes from the digest of its weights (kept while the file
    is unchanged); a folder that cannot be read means the bundled model, as in get_model."""
    name = configured_name()
    loaded = _loaded.get(name)
    if loaded is not None:
        return loaded.version
    if not name:
        return transformer.VERSION
    weights, tokenizer = transformer.local_files(Path(name).expanduser())
    try:
        stat = weights.stat()
        if not tokenizer.is_file():
            return transformer.VERSION
    except OSError:
        return transformer.VERSION
    key = (str(weights), stat.st_mtime, stat.st_size)
    if key not in _versions:
        digest = hashlib.sha256(weights.read_bytes()).hexdigest()[:12]
        _versions[key] = f"local/{weights.parent.name}@{digest}"
    return _versions[key]


def idle_limit() -> float:
    """Seconds without use after which the model is dropped; 0: never."""
    return float(max(0, config.get_int(IDLE_SETTING)))


def idle_for() -> float:
    """Seconds since the model was last asked for or last finished embedding."""
    return time.monotonic() - max(_last_used, encoder.last_used())


def loaded() -> bool:
    """An encoder process of this process is running."""
    return any(model.pid() is not None for model in list(_loaded.values()))


def in_flight() -> int:
    """Calls of `embed`/`encode` under way in this process."""
    return encoder.in_flight()


def unload_if_idle(limit: float | None = None) -> bool:
    """End the encoder process(es) when unused for `limit` seconds (default: the setting)
    and no embed is in flight; hand this process's freed heap back too (the vectors the
    searches read). True when it ended one."""
    if limit is None:
        limit = idle_limit()
        if limit <= 0:
            return False
    with _lock:
        if not loaded() or encoder.in_flight() or idle_for() < limit:
            return False
        running = list(_loaded.values())
    for model in running:
        model.close()
    gc.collect()
    index.release_free_heap()
    log.info("embedding model unloaded after %.0f s idle", limit)
    return True


def close_all() -> None:
    """End every encoder process now, in use or not (the end of a test run)."""
    with _lock:
        running = list(_loaded.values())
    for model in running:
        model.close()


def _watch() -> None:
    """Start this process's watcher (under `_lock`, when an encoder process starts): it
    checks every tenth of the idle limit (at most a minute) and ends once no encoder runs or
    the setting turns unloading off; the next start starts it again."""
    global _watcher
    if _watcher is not None:  # it looks again, under this lock, before it ends
        _wake.set()  # it may be sleeping on an older, longer limit: read it again
        return

    def watch() -> None:
        global _watcher
        while True:
            limit = idle_limit()
            if limit > 0:
                _wake.wait(min(60.0, max(0.05, limit / 10)))
                _wake.clear()
                try:
                    unload_if_idle(limit)
                except Exception:  # the encoder stays; the next look tries again
                    log.exception("embedding model idle unload failed")
            # Under the lock `_started` holds: an encoder started meanwhile keeps it watching.
            with _lock:
                if limit <= 0 or not loaded():
                    _watcher = None
                    return

    _watcher = threading.Thread(target=watch, name="cmem-embeddings-idle", daemon=True)
    _watcher.start()


def embed(texts: list[str]) -> np.ndarray:
    return get_model().embed(texts)
