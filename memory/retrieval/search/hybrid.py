"""Search by meaning: vector candidates, and their fusion with the keyword ranking.

`semantic`: the query text is embedded with the stored rows' model and each wanted kind's
vectors are scanned (`embeddings.index`); with filters, only rows passing them (read by the
backend, newest first, bounded) are scanned. `hybrid`: the keyword backend's best
`CANDIDATES` and the semantic best `CANDIDATES` are fused by reciprocal rank (RRF,
k = 60): a row's score is the sum of 1 / (60 + rank) over the lists it is in, so a row
both lists agree on wins, and one list's long tail cannot outweigh the other's head.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

from memory.retrieval import embeddings
from memory.retrieval.search.query import KINDS, Kind, Mode, SearchHit, SearchQuery

RRF_K = 60
CANDIDATES = 50
# A filtered semantic scan reads at most this many of the newest rows that pass the filters.
FILTER_SCAN_BOUND = 50_000
# Below this cosine a vector neighbour is noise, whatever its rank.
MIN_SIMILARITY = 0.2
# The keyword list's weight in the fusion when only the any-word fallback matched (0.2:
# measured on the recall set; 0.5 lost paraphrases, 0 lost keyword queries).
FALLBACK_WEIGHT = 0.2


class Backend(Protocol):
    def keyword(self, query: SearchQuery) -> list[SearchHit]: ...

    def keyword_ranked(self, query: SearchQuery) -> tuple[list[tuple[float, Kind, int]], bool]: ...

    def hits_by_ids(self, page: list[tuple[float, Kind, int]], text: str) -> list[SearchHit]: ...

    def allowed_ids(self, kind: Kind, query: SearchQuery, bound: int) -> set[int]: ...


def _has_vectors(kinds: list[Kind]) -> bool:
    from memory.retrieval.embeddings import index

    return any(index.stored_count(kind) for kind in kinds)


def semantic_ranked(backend: Backend, query: SearchQuery, k: int) -> list[tuple[float, Kind, int]]:
    """(cosine, kind, id) of the `k` nearest rows over the wanted kinds, best first."""
    kinds = [kind for kind in KINDS if query.wants(kind)]
    if not query.text.strip() or not kinds or not _has_vectors(kinds):
        return []
    from memory.retrieval.embeddings import index
    from memory.retrieval.embeddings.model import get_model

    model = get_model()
    vector = model.embed([query.text])[0]
    if not vector.any():
        return []
    ranked: list[tuple[float, Kind, int]] = []
    for kind in kinds:
        allowed = backend.allowed_ids(kind, query, FILTER_SCAN_BOUND) if query.filtered else None
        ranked += [
            (score, kind, pk)
            for score, pk in index.nearest(
                kind, model.version, vector, k=k, allowed=allowed, min_score=MIN_SIMILARITY
            )
        ]
    ranked.sort(key=lambda row: row[0], reverse=True)
    return ranked[:k]


def fuse(
    *lists: list[Any], weights: tuple[float, ...] | None = None, k: int = RRF_K
) -> list[tuple[float, Any]]:
    """Weighted reciprocal rank fusion: (score, item) best first; ties keep first-seen order."""
    scores: dict[Any, float] = {}
    for n, ranked in enumerate(lists):
        weight = weights[n] if weights else 1.0
        for rank, item in enumerate(ranked, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(((score, item) for item, score in scores.items()), key=lambda p: -p[0])


def effective_mode(mode: Mode) -> Mode:
    """The mode a search in `mode` runs in: keyword when the embeddings extra is absent."""
    return mode if embeddings.available() else "keyword"


def mode_note(mode: Mode) -> str:
    """Why a search in `mode` answered by keyword instead, or "" (it ran as asked)."""
    return "" if mode == "keyword" else embeddings.unavailable_note()


def search_mode(backend: Backend, query: SearchQuery) -> list[SearchHit]:
    """`query.mode` over `backend`; no text always means newest first (keyword path)."""
    if effective_mode(query.mode) == "keyword" or not query.text.strip():
        return backend.keyword(query)
    window = query.offset + query.limit
    if query.mode == "semantic":
        page = semantic_ranked(backend, query, window)[query.offset : window]
        return backend.hits_by_ids(page, query.text)
    depth = max(CANDIDATES, window)
    keyword, strict = backend.keyword_ranked(replace(query, limit=depth, offset=0))
    semantic = semantic_ranked(backend, query, depth)
    if not semantic:
        return backend.keyword(query)
    # A keyword list from the any-word fallback (no row holds every term) is a weak signal:
    # it ranks rows sharing one common word; the vectors lead then.
    fused = fuse(
        [(kind, pk) for _, kind, pk in keyword],
        [(kind, pk) for _, kind, pk in semantic],
        weights=(1.0 if strict else FALLBACK_WEIGHT, 1.0),
    )
    page = [(score, kind, pk) for score, (kind, pk) in fused[query.offset : window]]
    return backend.hits_by_ids(page, query.text)
