"""Search by meaning: vector candidates, and their fusion with the keyword ranking.

`semantic`: the query text is embedded with the stored rows' model and the backend finds
each wanted kind's nearest vectors (`Backend.nearest`): SQLite scans every vector
(`embeddings.index`); PostgreSQL asks pgvector where migrate installed it, else scans the
newest `FALLBACK_SCAN_BOUND` vectors plus the keyword candidates. Whatever the path, a
query with filters (or, in team mode, an owner) ranks only the rows those filters select,
the same SQL the keyword search uses, newest first and bounded. `hybrid`: the keyword backend's best
`CANDIDATES` and the semantic best `CANDIDATES` are fused by reciprocal rank (RRF,
k = `RRF_K`): a row's score is the sum of weight / (k + rank) over the lists it is in, so
a row both lists agree on wins, and one list's long tail cannot outweigh the other's head.
The keyword list's weight adapts to the query (`keyword_weight`): it shrinks when the rows
it ranks first are unrelated to the query by meaning (a paraphrase shares no content word
with what it means, so its keyword hits share only incidental words), and the vectors'
order then stands.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from memory.retrieval import embeddings
from memory.retrieval.embeddings import index
from memory.retrieval.embeddings.model import get_model
from memory.retrieval.search.query import KINDS, Kind, Mode, SearchHit, SearchQuery

if TYPE_CHECKING:
    import numpy as np

# RRF's k, the fallback weight and the relatedness ramp below: the set with the best hybrid
# R@5 on the tuning half of `python -m tests.bench recall`'s queries (even ids; the odd half is held
# out and reported), tuned together (`recall.TUNING_GRID`). A small k lets each list's head
# lead (the idf-weighted vectors rank well enough that their first rows deserve it); k 30
# and 60 lost 2-3 points with fixed weights, so the grid stops at 20.
RRF_K = 5
CANDIDATES = 50
# A filtered semantic scan reads at most this many of the newest rows that pass the filters.
FILTER_SCAN_BOUND = 50_000
# PostgreSQL without pgvector scans only this many of the newest vectors (plus the keyword
# candidates): the whole table at 1M rows would be a gigabyte of float32 per process.
FALLBACK_SCAN_BOUND = 100_000
# Below this cosine a vector neighbour is noise, whatever its rank.
MIN_SIMILARITY = 0.2
# The keyword list's weight in the fusion when only the any-word fallback matched (tuned
# with RRF_K). Before the relatedness ramp 0.75 won (rows sharing one common word are a
# weaker signal than rows holding them all); with it, the ramp does that job and 1.0 wins.
FALLBACK_WEIGHT = 1.0
# Query-adaptive weight: the keyword list's weight is multiplied by a ramp over the mean
# cosine between the query and the keyword list's first RELATEDNESS_TOP rows, 0 below
# RELATEDNESS_CENTER - RELATEDNESS_WIDTH / 2, full above its other end. Center and width
# were tuned with RRF_K and FALLBACK_WEIGHT on the tuning half of `python -m tests.bench recall`. On
# that set the head's mean cosine is 0.19 for paraphrases (hits sharing only incidental
# words) against 0.42 for keyword and file queries (WordLlama alone, whose ramp was 0.25 /
# 0.1; the paired model's tuning chose 0.35 / 0.2).
RELATEDNESS_TOP = 3
RELATEDNESS_CENTER = 0.35
RELATEDNESS_WIDTH = 0.2


class Backend(Protocol):
    def keyword(self, query: SearchQuery) -> list[SearchHit]: ...

    def keyword_ranked(self, query: SearchQuery) -> tuple[list[tuple[float, Kind, int]], bool]: ...

    def hits_by_ids(self, page: list[tuple[float, Kind, int]], text: str) -> list[SearchHit]: ...

    def nearest(
        self,
        kind: Kind,
        query: SearchQuery,
        model: str,
        vector: np.ndarray,
        k: int,
        candidates: list[int],
    ) -> list[tuple[float, int]]:
        """(cosine, id) of the `k` nearest rows of `kind` the query's filters allow, best
        first; `candidates`: the keyword list's ids of this kind (a bounded scan adds them)."""
        ...


def query_vector(query: SearchQuery) -> tuple[str, np.ndarray] | None:
    """(model version, vector) of the query text, or None when it has nothing to embed or
    no wanted kind has vectors stored."""
    if not query.text.strip():
        return None
    if not index.kinds_stored([kind for kind in KINDS if query.wants(kind)]):
        return None

    model = get_model()
    vector = model.embed([query.text])[0]
    return (model.version, vector) if vector.any() else None


def semantic_ranked(
    backend: Backend,
    query: SearchQuery,
    k: int,
    keyword: list[tuple[float, Kind, int]] | None = None,
    embedded: tuple[str, np.ndarray] | None = None,
) -> list[tuple[float, Kind, int]]:
    """(cosine, kind, id) of the `k` nearest rows over the wanted kinds, best first;
    `embedded`: the query's `query_vector`, when the caller has it already."""
    embedded = embedded or query_vector(query)
    if embedded is None:
        return []
    model, vector = embedded
    ranked: list[tuple[float, Kind, int]] = []
    for kind in index.kinds_stored([kind for kind in KINDS if query.wants(kind)]):
        candidates = [pk for _, k_, pk in keyword or [] if k_ == kind]
        ranked += [
            (score, kind, pk)
            for score, pk in backend.nearest(kind, query, model, vector, k, candidates)
        ]
    ranked.sort(key=lambda row: row[0], reverse=True)
    return ranked[:k]


def relatedness(keyword: list[tuple[float, Kind, int]], embedded: tuple[str, np.ndarray]) -> float:
    """Mean cosine between the query and the keyword list's first `RELATEDNESS_TOP` rows
    (those with a vector: one indexed read of at most that many); 1.0 when none has one,
    so a store not embedded yet keeps its keyword ranking."""
    model, vector = embedded
    head = keyword[:RELATEDNESS_TOP]
    cosines: list[float] = []
    for kind in dict.fromkeys(kind for _, kind, _ in head):
        _, vectors = index.vectors_of(kind, model, [pk for _, k_, pk in head if k_ == kind])
        if len(vectors) and vectors.shape[1] == vector.shape[0]:
            cosines += [float(c) for c in vectors @ vector]
    return sum(cosines) / len(cosines) if cosines else 1.0


def keyword_weight(strict: bool, related: float) -> float:
    """The keyword list's weight in the fusion: FALLBACK_WEIGHT when the any-word fallback
    answered, times the ramp of `related` (see RELATEDNESS_CENTER)."""
    ramp = (related - RELATEDNESS_CENTER) / RELATEDNESS_WIDTH + 0.5
    return (1.0 if strict else FALLBACK_WEIGHT) * min(1.0, max(0.0, ramp))


def fuse(
    *lists: list[Any], weights: tuple[float, ...] | None = None, k: int = 60
) -> list[tuple[float, Any]]:
    """Weighted reciprocal rank fusion: (score, item) best first; ties keep first-seen order.
    `k` defaults to the textbook 60; search passes its tuned `RRF_K`."""
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
    embedded = query_vector(query)
    semantic = semantic_ranked(backend, query, depth, keyword, embedded)
    if not semantic or embedded is None:
        return backend.keyword(query)
    fused = fuse(
        [(kind, pk) for _, kind, pk in keyword],
        [(kind, pk) for _, kind, pk in semantic],
        weights=(keyword_weight(strict, relatedness(keyword, embedded)), 1.0),
        k=RRF_K,
    )
    page = [(score, kind, pk) for score, (kind, pk) in fused[query.offset : window]]
    return backend.hits_by_ids(page, query.text)
