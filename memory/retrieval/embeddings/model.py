"""The embedding model: which one, loaded once per process, and its version.

The default is the bundled transformer (`transformer.py`: all-MiniLM-L6-v2, int8, run by
ONNX Runtime, shipped in cmem's wheel). `CLAUDE_MEM_EMBEDDINGS_MODEL` may name a local
folder holding another sentence encoder in the same layout (`model.onnx` taking
`input_ids` and `attention_mask` and answering one pooled, normalised vector per text;
`tokenizer.json` of the WordPiece kind); when it is missing or unreadable cmem logs why and
keeps the default. Nothing is ever downloaded.

Each vector is stored with the version of the model that made it, so a model change is
caught up by the background sweep (`store.embed_pending`) and search only compares vectors
of one model.

The model loads on first use and is dropped again after `CLAUDE_MEM_EMBEDDINGS_IDLE_SECONDS`
without use (default 600; 0 keeps it): the ONNX session, its weights and the tokenizer are
about 60 MB of the worker's memory, which an idle worker should give back. A watcher thread
per process checks; a model in the middle of an `embed` is never dropped (the transformer
counts its calls in flight), and the next use loads it again.
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
from memory.retrieval.embeddings import index, transformer
from memory.retrieval.embeddings.transformer import TransformerModel

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

DEFAULT_NAME = transformer.NAME
Model = TransformerModel

_lock = threading.Lock()
_loaded: dict[str, Model] = {}
IDLE_SETTING = "CLAUDE_MEM_EMBEDDINGS_IDLE_SECONDS"
# When get_model last answered (monotonic seconds); the transformer keeps its own for embed.
_last_used = 0.0
_watcher: threading.Thread | None = None
_wake = threading.Event()


def configured_name() -> str:
    return config.get("CLAUDE_MEM_EMBEDDINGS_MODEL").strip()


def _local_files(folder: Path) -> tuple[Path, Path]:
    return folder / "model.onnx", folder / "tokenizer.json"


def _local(folder: Path) -> Model:
    weights, tokenizer = _local_files(folder)
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()[:12]
    return transformer.load(weights, tokenizer, version=f"local/{folder.name}@{digest}")


def get_model() -> Model:
    """The configured model, loaded on first use (and again after an idle unload)."""
    global _last_used
    _last_used = time.monotonic()
    name = configured_name()
    model = _loaded.get(name)
    if model is not None:
        return model
    with _lock:
        if name not in _loaded:
            if name:
                try:
                    _loaded[name] = _local(Path(name).expanduser())
                except Exception as exc:  # noqa: BLE001 - any unreadable model means: use the default
                    log.warning(
                        "CLAUDE_MEM_EMBEDDINGS_MODEL=%s cannot be loaded (%s); using the bundled %s",
                        name,
                        exc,
                        DEFAULT_NAME,
                    )
                    _loaded[name] = _loaded.get("") or transformer.load()
            else:
                _loaded[name] = transformer.load()
            # The load's transient buffers (the file read, graph optimisation) are freed by
            # now; glibc keeps their pages unless asked (the scan's matrix load used to ask).
            index.release_free_heap()
            _watch()
        return _loaded[name]


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
    weights, tokenizer = _local_files(Path(name).expanduser())
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
    return time.monotonic() - max(_last_used, transformer.last_used())


def loaded() -> bool:
    return bool(_loaded)


def unload_if_idle(limit: float | None = None) -> bool:
    """Drop the loaded model(s) when unused for `limit` seconds (default: the setting) and
    no embed is in flight; hand the freed heap back to the OS. True when it dropped one."""
    if limit is None:
        limit = idle_limit()
        if limit <= 0:
            return False
    with _lock:
        if not _loaded or transformer.in_flight() or idle_for() < limit:
            return False
        _loaded.clear()
    gc.collect()  # the session and tokenizer are freed by refcount; any cycle with them now
    index.release_free_heap()
    log.info("embedding model unloaded after %.0f s idle", limit)
    return True


def _watch() -> None:
    """Start this process's watcher (under `_lock`, once a model is in `_loaded`): it checks
    every tenth of the idle limit (at most a minute) and ends once the model is dropped or
    the setting turns unloading off; the next load starts it again."""
    global _watcher
    if _watcher is not None and _watcher.is_alive():
        _wake.set()  # it may be sleeping on an older, longer limit: read it again
        return

    def watch() -> None:
        while (limit := idle_limit()) > 0:
            _wake.wait(min(60.0, max(0.05, limit / 10)))
            _wake.clear()
            try:
                if not _loaded or unload_if_idle(limit):
                    return
            except Exception:  # a failed check leaves the model loaded: say why, stop
                log.exception("embedding model idle unload failed")
                return

    _watcher = threading.Thread(target=watch, name="cmem-embeddings-idle", daemon=True)
    _watcher.start()


def embed(texts: list[str]) -> np.ndarray:
    return get_model().embed(texts)


def warm_in_background() -> None:
    """Load the model off the request path (the server calls this once at start)."""
    threading.Thread(target=_warm, name="cmem-embeddings-warm", daemon=True).start()


def _warm() -> None:
    try:
        get_model()
    except Exception:
        log.exception("embedding model warm-up failed")
