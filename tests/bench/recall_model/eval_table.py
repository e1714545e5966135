"""Semantic R@5 of a static table on the recall set, per half and group, in memory (issue 18).

A maintainer's quick check between fits (seconds, against minutes for `python -m tests.bench recall`,
which also tunes the fusion and times searches): the same labelled set and the same texts
the consumer embeds (title and narrative), every observation scanned by one matrix product,
the tuning half (even query ids) first. Also the two hand-made commerce probes the search
and prompt-recall tests rest on (tests/retrieval/test_semantic_search.py ROWS and PARAPHRASE).

    CLAUDE_MEM_DATA_DIR=/tmp/eval .venv/bin/python tests/bench/recall_model/eval_table.py \\
        default /tmp/table [--int8]

`default` is the bundled model; a folder is a model2vec-layout table. `--int8` also scores
each table rounded to int8 with one scale per row (what a smaller file would give).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cmem_site.settings")
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))


def scores(model: Any, data: dict[str, Any], join: Any) -> dict[tuple[str, str], float]:
    import numpy as np

    observations = data["observations"]
    index = {o["key"]: i for i, o in enumerate(observations)}
    rows = model.embed([join(o["title"], o["narrative"]) for o in observations])
    queries = model.embed([q["text"] for q in data["queries"]])
    found: dict[tuple[str, str], list[float]] = {}
    for q, sims in zip(data["queries"], queries @ rows.T, strict=True):
        top = set(np.argsort(-sims)[:5].tolist())
        relevant = {index[key] for key in q["relevant"]}
        half = "tuning" if q["id"] % 2 == 0 else "held out"
        for group in (q["group"], "all"):
            found.setdefault((half, group), []).append(len(top & relevant) / min(len(relevant), 5))
    return {key: float(np.mean(values)) for key, values in found.items()}


def report(label: str, model: Any, data: dict[str, Any], join: Any) -> None:
    from tests.retrieval.test_semantic_search import PARAPHRASE, ROWS

    r = scores(model, data, join)
    texts = [join(title, narrative) for _, _, title, narrative, _ in ROWS]
    fixture = model.embed(texts)
    para, dup = model.embed([PARAPHRASE, "orders refunds duplicate"]) @ fixture.T
    print(
        f"{label}: tuning all/paraphrase {r['tuning', 'all']:.3f}/{r['tuning', 'paraphrase']:.3f}"
        f" | held out all/keyword/paraphrase/file {r['held out', 'all']:.3f}/"
        f"{r['held out', 'keyword']:.3f}/{r['held out', 'paraphrase']:.3f}/"
        f"{r['held out', 'file/symbol']:.3f} | paraphrase probe: refunds {para[0]:.2f}, "
        f"best other {max(para[1:]):.2f} | 'orders refunds duplicate': refunds {dup[0]:.2f}, "
        f"stripe {dup[5]:.2f}",
        flush=True,
    )


def main() -> None:
    import django
    import numpy as np

    django.setup()
    from memory.retrieval.embeddings import model as models
    from memory.retrieval.embeddings.store import _join
    from tests.bench.recall import load_set

    data = load_set()
    for name in [a for a in sys.argv[1:] if a != "--int8"]:
        model = models._bundled() if name == "default" else models._local(Path(name))
        report(name, model, data, _join)
        if "--int8" in sys.argv and name != "default":
            table = np.asarray(model.table, dtype=np.float32)
            scale = np.abs(table).max(axis=1, keepdims=True) / 127
            scale[scale == 0] = 1
            rounded = np.round(table / scale).astype(np.int8).astype(np.float32) * scale
            report(
                f"{name} int8", models.EmbeddingModel("int8", rounded, model.tokenizer), data, _join
            )


if __name__ == "__main__":
    main()
