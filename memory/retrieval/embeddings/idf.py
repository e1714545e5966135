"""Token weights for the bundled model: inverse document frequency over coding-work records.

A plain mean of token rows lets the filler tokens of a sentence ("the", "for", "when",
sub-word pieces) pull every vector toward the same centre, so a question and a record that
share only their meaning end up no closer than any two rows. Weighting each token by its
idf (SIF-style pooling) lets the rare, content-bearing tokens decide. The weights are
fixed and shipped (`data/l2_supercat_idf.npy`, float16, one per vocabulary entry), not
learnt from a user's store: a vector must not change when unrelated rows arrive, and the
model version (which names the weighting) is what says when rows need re-embedding.

They were counted once over the observation texts of the recall benchmark's set (commit
records of four public projects plus the written ones; document text only, no query and
no label); `python -m memory.retrieval.embeddings.model --rebuild-idf` counts them again.
Weights counted from half of those documents rank the benchmark's queries the same
(docs/guide/search.md), so they are not tied to the exact rows they came from.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

WEIGHTS = Path(__file__).parent / "data" / "l2_supercat_idf.npy"
# The recall benchmark's set, in a checkout only (the rebuild is a developer's tool).
_SET = Path(__file__).parents[3] / "tests" / "bench" / "data" / "recall.json.gz"


def compute(texts: Iterable[str], tokenizer: Any, vocab: int) -> Any:
    """idf = ln((N + 1) / (df + 1)) per token id; a token never seen gets the highest."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    df = np.zeros(vocab, dtype=np.float64)
    docs = list(texts)
    for encoding in tokenizer.encode_batch_fast(docs, add_special_tokens=False):
        ids = np.unique(np.asarray(encoding.ids, dtype=np.int64))
        df[ids[ids < vocab]] += 1
    return np.log((len(docs) + 1) / (df + 1)).astype(np.float32)


def load(vocab: int) -> Any:
    """The shipped weights (float32), or None when the file is absent or of another size."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    try:
        weights = np.load(WEIGHTS)
    except OSError:
        return None
    return weights.astype(np.float32) if weights.shape == (vocab,) else None


def rebuild(tokenizer: Any, vocab: int) -> str:
    """Count the weights again from the recall set and write the shipped file."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    with gzip.open(_SET, "rt", encoding="utf-8") as f:
        rows = json.load(f)["observations"]
    # What the store embeds for these rows (store.texts: title and narrative, the others empty).
    texts = ["\n".join(p for p in (o["title"], o["narrative"]) if p)[:4000] for o in rows]
    weights = compute(texts, tokenizer, vocab)
    WEIGHTS.parent.mkdir(exist_ok=True)
    np.save(WEIGHTS, weights.astype(np.float16))
    return f"{WEIGHTS}: {len(texts)} documents, max idf {math.log(len(texts) + 1):.2f}"
