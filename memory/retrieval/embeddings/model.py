"""The embedding model: two static (token-table) models that ship inside wheels, paired.

The default pairs WordLlama's `l2_supercat` 256-dimension table (bundled in the `wordllama`
wheel with its tokenizer) with a table distilled from the all-MiniLM-L6-v2 transformer
(`data/minilm_table.safetensors`, int8 with one scale per row, and its WordPiece tokenizer,
shipped in cmem's own wheel; `tests/bench/recall_model/` has how it was made). Each gives a text
a unit vector: WordLlama's is the idf-weighted sum of its tokens' rows (weights shipped
with cmem, `idf.py`: filler tokens count for little), the distilled table's the plain sum
(its per-token weights are folded into its rows). The pair is one vector of 256
dimensions: both vectors side by side, weighted so a dot product is their cosines' mean
weighted by `alpha`, centred and projected onto the 256 principal axes of a generic corpus
(`data/pairing.npz`), L2-normalised, so a dot product is the cosine similarity. Nothing is
ever downloaded: WordLlama's own loader would look for its tokenizer in a folder the wheel
does not have and then try Hugging Face, so the files are opened here directly.

Why two: on `python -m tests.bench recall`'s tuning half the pair beats either table alone, and each
covers the other's gaps (WordLlama knows everyday words like buyers and money, the
distilled table what a question means); docs/guide/search.md.

`CLAUDE_MEM_EMBEDDINGS_MODEL` may name a local folder with another static model in the
model2vec layout (`tokenizer.json`, `model.safetensors`); when it is missing or unreadable
cmem logs why and keeps the default.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import math
import struct
import threading
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory import config

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

# Longer texts are cut: the mean over the first 512 tokens already says what a row is about.
MAX_TOKENS = 512
# "-idf1": the token weighting is part of the version, so rows embedded with the plain mean
# (or an older weighting) are re-embedded in the background; "+minilm-pair1" names the
# paired table and its pairing (`data/`), so a new one re-embeds too.
WORDLLAMA_NAME = "wordllama/l2_supercat-256-idf1"
DEFAULT_NAME = WORDLLAMA_NAME + "+minilm-pair1"
DATA = Path(__file__).parent / "data"


@dataclass(frozen=True)
class EmbeddingModel:
    """A token table and its tokenizer. `version` is stored with every vector."""

    version: str
    table: Any  # np.ndarray (vocab, dim), float16 or float32 as stored
    tokenizer: Any  # tokenizers.Tokenizer
    weights: Any = None  # np.ndarray (vocab,) float32 per-token weights; None: plain mean

    @property
    def dim(self) -> int:
        return int(self.table.shape[1])

    def embed(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32 unit vectors; an empty text gets a zero vector."""
        # optional dependency (numpy: the embeddings extra)
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        # encode_batch_fast skips the character offsets, which pooling never reads: 0.10 s
        # against 0.22 s for the recall set's 3,285 rows (tokenizers >= 0.20; older: plain).
        encode = getattr(self.tokenizer, "encode_batch_fast", self.tokenizer.encode_batch)
        encodings = encode(texts, add_special_tokens=False)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(texts))
        nonempty = np.flatnonzero(lengths)
        if not len(nonempty):
            return out
        ids = np.concatenate([np.asarray(encodings[i].ids, dtype=np.int64) for i in nonempty])
        np.clip(ids, 0, self.table.shape[0] - 1, out=ids)
        starts = np.concatenate(([0], np.cumsum(lengths[nonempty])[:-1]))
        rows = self.table[ids].astype(np.float32, copy=False)
        if self.weights is not None:
            rows *= self.weights[ids, None]
        # Sum of each text's (weighted) token rows in one pass, no padding.
        sums = np.add.reduceat(rows, starts, axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        out[nonempty] = sums / norms
        return out


@dataclass(frozen=True)
class PairedModel:
    """Two models' unit vectors side by side, `alpha` weighting the second, centred and
    projected to `projection`'s width (see the module docstring)."""

    version: str
    parts: tuple[EmbeddingModel, EmbeddingModel]
    alpha: float
    centre: Any  # np.ndarray (dim0 + dim1,) float32
    projection: Any  # np.ndarray (dim0 + dim1, dim) float32

    @property
    def dim(self) -> int:
        return int(self.projection.shape[1])

    def embed(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32 unit vectors; a text neither part can read (empty)
        gets a zero vector."""
        # optional dependency (numpy: the embeddings extra)
        import numpy as np

        first, second = (part.embed(texts) for part in self.parts)
        # math.sqrt: a Python float keeps the product float32 (a NumPy float64 scalar would
        # widen it, and the projection with it, on every call: 0.3 ms a prompt, not 0.09).
        paired = np.hstack([math.sqrt(1 - self.alpha) * first, math.sqrt(self.alpha) * second])
        empty = ~paired.any(axis=1)
        out = ((paired - self.centre) @ self.projection).astype(np.float32, copy=False)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        out /= norms
        out[empty] = 0.0
        return out


Model = EmbeddingModel | PairedModel


def _tokenizer(path: Path) -> Any:
    # optional dependency (tokenizers: the embeddings extra)
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_TOKENS)
    return tokenizer


# safetensors dtypes a table may be stored in, mapped as they are (an int8 table comes with
# one float32 scale per row, which embed() applies as the row's weight).
_MAPPABLE = {"F16": "<f2", "F32": "<f4", "I8": "i1"}


def _table(path: Path, keys: tuple[str, ...]) -> Any:
    """The token table, mapped from the file when it is stored as float16, float32 or int8.

    Mapped, only the pages of the rows texts use become resident, and they are clean file
    pages the kernel can drop and share: the bundled table's 16 MB read into the heap pushed
    the worker past its 160 MB after a workload. Kept as stored: embed() widens
    only the rows a text uses, and float16 -> float32 is exact, so the vectors are the same
    as from a table widened up front. Any other dtype is read and widened by safetensors."""
    key, table = _mapped(path, keys, ndim=2)
    return _table_read(path, key) if table is None else table


def _header(path: Path) -> tuple[dict[str, Any], int]:
    """A safetensors file's header and the offset its data starts at."""
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size)) if size < 100_000_000 else {}
    return header, 8 + size


def _mapped(path: Path, keys: tuple[str, ...], *, ndim: int) -> tuple[str, Any]:
    """The first of `keys` in the file and that tensor memory-mapped, or None when its dtype
    or layout cannot be mapped as is. Read without importing safetensors (a megabyte the
    worker need not hold)."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    header, data = _header(path)
    key = next((k for k in keys if k in header), None)
    if key is None:
        raise ValueError(f"{path}: none of the tensors {keys}")
    entry = header[key]
    start, end = entry["data_offsets"]
    shape = tuple(entry["shape"])
    dtype = _MAPPABLE.get(entry["dtype"])
    if (
        dtype is None
        or len(shape) != ndim
        or end - start != np.prod(shape) * np.dtype(dtype).itemsize
    ):
        return key, None
    return key, np.memmap(path, dtype=dtype, mode="r", offset=data + start, shape=shape)


def _table_read(path: Path, key: str) -> Any:
    # optional dependencies (numpy, safetensors: the embeddings extra)
    import numpy as np
    from safetensors import safe_open

    with safe_open(str(path), framework="np") as f:
        return np.ascontiguousarray(f.get_tensor(key).astype(np.float32))


def _bundled() -> PairedModel:
    """WordLlama paired with the distilled MiniLM table (the module docstring)."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    with np.load(DATA / "pairing.npz") as pairing:
        alpha = float(pairing["alpha"])
        centre, projection = pairing["centre"], pairing["projection"]
    parts = (_wordllama(), _minilm(DATA))
    if projection.shape[0] != parts[0].dim + parts[1].dim:
        raise ValueError(f"{DATA / 'pairing.npz'} does not fit the two tables")
    return PairedModel(_bundled_version(), parts, alpha, centre, projection)


def _bundled_version() -> str:
    return f"{DEFAULT_NAME}@{version('wordllama')}"


def _minilm(folder: Path) -> EmbeddingModel:
    """The distilled table: int8 rows, their scales as per-token weights."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    path = folder / "minilm_table.safetensors"
    _, scales = _mapped(path, ("scales",), ndim=1)
    if scales is None:
        raise ValueError(f"{path}: its scales are not float32")
    return EmbeddingModel(
        version="minilm-distilled",
        table=_table(path, ("embeddings",)),
        tokenizer=_tokenizer(folder / "minilm_tokenizer.json"),
        weights=np.array(scales, dtype=np.float32),
    )


def _wordllama(*, weighted: bool = True) -> EmbeddingModel:
    # wordllama only: the IDF weights' module loads with that model
    from memory.retrieval.embeddings import idf

    # The package's folder, found without importing it: wordllama's __init__ pulls requests,
    # pydantic and its own loader, none of which reading two files needs. huggingface_hub
    # (a dependency of tokenizers) is never imported either: Tokenizer.from_file is local.
    spec = importlib.util.find_spec("wordllama")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("wordllama is not installed (the embeddings extra)")
    root = Path(next(iter(spec.submodule_search_locations)))
    table = _table(root / "weights" / "l2_supercat_256.safetensors", ("embedding.weight",))
    weights = idf.load(table.shape[0]) if weighted else None
    if weighted and weights is None:
        raise FileNotFoundError(f"{idf.WEIGHTS} is missing or does not fit the model")
    return EmbeddingModel(
        version=f"{WORDLLAMA_NAME}@{version('wordllama')}",
        table=table,
        tokenizer=_tokenizer(root / "tokenizers" / "l2_supercat_tokenizer_config.json"),
        weights=weights,
    )


def _local(folder: Path) -> EmbeddingModel:
    weights, tokenizer = folder / "model.safetensors", folder / "tokenizer.json"
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()[:12]
    return EmbeddingModel(
        version=f"local/{folder.name}@{digest}",
        table=_table(weights, ("embeddings", "embedding.weight")),
        tokenizer=_tokenizer(tokenizer),
    )


_lock = threading.Lock()
_loaded: dict[str, Model] = {}


def configured_name() -> str:
    return config.get("CLAUDE_MEM_EMBEDDINGS_MODEL").strip()


def get_model() -> Model:
    """The configured model, loaded once per process (its tables are mapped, not read)."""
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
                    _loaded[name] = _loaded.get("") or _bundled()
            else:
                _loaded[name] = _bundled()
        return _loaded[name]


_versions: dict[tuple[str, float, int], str] = {}


def model_version() -> str:
    """The configured model's `version`, without loading it when it is not loaded yet.

    Equal to `get_model().version`: the bundled model's comes from wordllama's metadata, a
    local folder's from the digest of its weights (kept while the file is unchanged); a
    folder that cannot be read means the bundled model, as in get_model."""
    name = configured_name()
    loaded = _loaded.get(name)
    if loaded is not None:
        return loaded.version
    bundled = _bundled_version()
    if not name:
        return bundled
    weights = Path(name).expanduser() / "model.safetensors"
    try:
        stat = weights.stat()
        if not (weights.parent / "tokenizer.json").is_file():
            return bundled
    except OSError:
        return bundled
    key = (str(weights), stat.st_mtime, stat.st_size)
    if key not in _versions:
        digest = hashlib.sha256(weights.read_bytes()).hexdigest()[:12]
        _versions[key] = f"local/{weights.parent.name}@{digest}"
    return _versions[key]


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


if __name__ == "__main__":
    import sys

    from memory.retrieval.embeddings import idf

    if sys.argv[1:] != ["--rebuild-idf"]:
        sys.exit("usage: python -m memory.retrieval.embeddings.model --rebuild-idf")
    plain = _wordllama(weighted=False)
    print(idf.rebuild(plain.tokenizer, int(plain.table.shape[0])))
