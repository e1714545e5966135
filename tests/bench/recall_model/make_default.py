"""Make the bundled model's data files from a fitted table (issue 18).

A maintainer's script, run in the project's venv (numpy, tokenizers, safetensors): it
turns a table made by `make_table.py` into what `memory/retrieval/embeddings/data/` ships
beside WordLlama's idf weights, and `model.py` pairs with WordLlama:

    .venv/bin/python tests/bench/recall_model/make_default.py --table /tmp/table \\
        --wordnet /usr/share/wordnet --alpha 0.6

1. the table rounded to int8 with one scale per row (`minilm_table.safetensors`: tensors
   `embeddings`, int8, and `scales`, float32; half the float16 file, and R@5 moved by at
   most one query per group on every table measured), and its tokenizer
   (`minilm_tokenizer.json`);
2. the pairing (`pairing.npz`): a text's vector is [sqrt(1 - alpha) * WordLlama's unit
   vector, sqrt(alpha) * the table's unit vector] (so a dot product is the alpha-weighted
   mean of the two cosines), minus `centre`, times `projection` (512 x 256), unit length.
   Centre and projection are the mean and the top 256 principal axes of the paired
   vectors of a generic corpus, NOT the benchmark: 20,000 developer-prose texts of the
   venv's packages (`make_table.corpus`, the pallets projects left out) and 5,000 WordNet
   texts (`make_table.wordnet`). Stored vectors and the scan keep their 256 dimensions.

Which table and which alpha: the tuning half of `python -m tests.bench recall` (README "Search by
meaning", "The default since stop 28").
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
DATA = ROOT / "memory" / "retrieval" / "embeddings" / "data"
DIM = 256


def main() -> None:
    import numpy as np
    from make_table import corpus, wordnet  # type: ignore[import-not-found]
    from safetensors.numpy import load_file, save_file

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--table", required=True, type=Path, help="make_table.py's --out")
    parser.add_argument("--wordnet", required=True, help="WordNet's data folder")
    parser.add_argument("--alpha", type=float, default=0.6)
    parser.add_argument("--out", type=Path, default=DATA)
    parser.add_argument("--uncentred", action="store_true", help="store a zero centre")
    parser.add_argument("--site-packages", default=str(ROOT / ".venv/lib/python3.11/site-packages"))
    args = parser.parse_args()

    table = next(iter(load_file(str(args.table / "model.safetensors")).values()))
    table = table.astype(np.float32)
    scales = np.abs(table).max(axis=1) / 127
    scales[scales == 0] = 1.0
    rounded = np.round(table / scales[:, None]).astype(np.int8)
    args.out.mkdir(parents=True, exist_ok=True)
    save_file(
        {"embeddings": rounded, "scales": scales.astype(np.float32)},
        str(args.out / "minilm_table.safetensors"),
    )
    (args.out / "minilm_tokenizer.json").write_bytes((args.table / "tokenizer.json").read_bytes())

    from memory.retrieval.embeddings import model as models

    wordllama, minilm = models._wordllama(), models._minilm(args.out)
    dev = corpus([args.site_packages])
    random.Random(7).shuffle(dev)
    general = wordnet(args.wordnet)
    random.Random(7).shuffle(general)
    texts = dev[:20_000] + general[:5_000]
    paired = np.hstack(
        [
            np.sqrt(1 - args.alpha) * wordllama.embed(texts),
            np.sqrt(args.alpha) * minilm.embed(texts),
        ]
    )
    paired = paired[np.abs(paired).sum(axis=1) > 0]
    centre = paired.mean(axis=0)
    _, _, axes = np.linalg.svd(paired - centre, full_matrices=False)
    np.savez(
        args.out / "pairing.npz",
        alpha=np.float32(args.alpha),
        centre=(0 * centre if args.uncentred else centre).astype(np.float32),
        projection=axes[:DIM].T.astype(np.float32),
    )
    print(f"{args.out}: {table.shape[0]} rows, alpha {args.alpha}, {len(paired)} corpus texts")


if __name__ == "__main__":
    main()
