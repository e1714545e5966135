"""Folding near-identical search hits: the same kind, type, title (case, spacing and
punctuation aside) and first file, within one session (or one local day when the hit has
no session). A compression that ran twice, or an agent re-reading the same file in a loop,
otherwise fills a page with the same row.

Folding never drops a hit. The page shows the best-ranked hit of each fold with a "+N
similar" expander; the API returns every hit in rank order with its `fold` key (equal keys
= one fold), `fold_size` (hits in the fold) and `fold_lead` (true on the best-ranked one),
so a client can fold, or not.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from memory.retrieval.search.query import SearchHit

_NOISE = re.compile(r"[\W_]+", re.UNICODE)


def fold_key(hit: SearchHit) -> str:
    title = _NOISE.sub(" ", hit.title.casefold()).strip()
    first_file = hit.files[0] if hit.files else ""
    scope = f"s{hit.session}" if hit.session else f"d{timezone.localdate(hit.created_at)}"
    raw = "\x1f".join((hit.kind, hit.type, title, first_file, scope))
    return hashlib.sha1(raw.encode(), usedforsecurity=False).hexdigest()[:12]


@dataclass
class HitFold:
    key: str
    lead: SearchHit
    similar: list[SearchHit] = field(default_factory=list)

    @property
    def size(self) -> int:
        return 1 + len(self.similar)


def hits_fold(hits: list[SearchHit]) -> list[HitFold]:
    """Folds in rank order: each led by its best-ranked hit."""
    return _folds(hits, [fold_key(hit) for hit in hits])


def _folds(hits: list[SearchHit], keys: list[str]) -> list[HitFold]:
    folds: dict[str, HitFold] = {}
    for hit, key in zip(hits, keys, strict=True):
        if key in folds:
            folds[key].similar.append(hit)
        else:
            folds[key] = HitFold(key=key, lead=hit)
    return list(folds.values())


def hits_with_folds(hits: list[SearchHit]) -> list[dict[str, Any]]:
    """Every hit as the API returns it, in rank order, with its fold (each key computed
    once: it was a third of this function's time, on a search's hot path)."""
    keys = [fold_key(hit) for hit in hits]
    folds = _folds(hits, keys)
    size = {f.key: f.size for f in folds}
    leads = {id(f.lead) for f in folds}
    out = []
    for hit, key in zip(hits, keys, strict=True):
        row = hit.as_dict()
        row["fold"], row["fold_size"], row["fold_lead"] = key, size[key], id(hit) in leads
        out.append(row)
    return out
