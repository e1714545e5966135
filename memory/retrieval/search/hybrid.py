"""Search by meaning: vector candidates, and their fusion with the keyword ranking.

`semantic`: the query text is embedded with the stored rows' model and the backend finds
each wanted kind's nearest vectors (`Backend.nearest`): SQLite scans every vector
(`embeddings.index`); PostgreSQL asks pgvector where migrate installed it, else scans the
newest `FALLBACK_SCAN_BOUND` vectors plus the keyword candidates. Whatever the path, a
query with filters (or, in team mode, an owner) ranks only the rows those filters select,
the same SQL the keyword search uses, newest first and bounded.

`hybrid` never trusts either list blindly; each one's weight comes from this query's own
scores, with no constant tuned on a benchmark (docs/design/retrieval.md, "Fusion"):
1. **Is the semantic list evidence at all?** A vector neighbour counts only when its
   cosine stands out from what this query scores against the store at large: its z-score
   over a sample of stored vectors (`index.null_sample`) must exceed sqrt(2 ln N), the
   expected maximum of N draws of noise, N being the rows compared. On everyday
   conversation the best neighbour often does not (every line of small talk is a little
   like every question), and hybrid then answers exactly what keyword search answers.
2. **Is the keyword list evidence?** Its weight is the share of the query's content words
   its best rows hold (`Backend.term_coverage`, as odds: full weight from one half up). A
   paraphrase shares only incidental words with what it means, so its keyword hits weigh
   little; a question naming the things it asks about keeps them in full.
3. The lists that count are fused by reciprocal rank (RRF, the textbook k = 60): a row's
   score is the sum of weight / (k + rank) over the lists it is in, so a row both agree on
   wins, and one list's long tail cannot outweigh the other's head.

Currency (`rank_weight`): each list's score is multiplied by a row's weight before that
list is ordered: the keyword score in its SQL (both backends), the cosine in
`semantic_ranked`; the fusion then fuses lists already in that order, so the weight acts
once per list, never twice. A multiplicative weight, not an offset, because scores of one
list differ in scale from query to query (bm25, ts_rank, cosine): a factor keeps the order
among rows of the same currency and only moves a hypothesis below a known row when their
scores are within that factor, i.e. of similar score.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from django.db.models import Q

from memory.models import Observation
from memory.retrieval import embeddings
from memory.retrieval.embeddings import index
from memory.retrieval.embeddings.model import get_model, model_version
from memory.retrieval.embeddings.store import waiting
from memory.retrieval.search.query import KINDS, Kind, Mode, SearchHit, SearchQuery

if TYPE_CHECKING:
    import numpy as np

# Reciprocal rank fusion's k: the value of the paper that introduced it (Cormack et al.,
# 2009), not tuned here.
RRF_K = 60
CANDIDATES = 50
# A filtered semantic scan reads at most this many of the newest rows that pass the filters.
FILTER_SCAN_BOUND = 50_000
# PostgreSQL without pgvector scans only this many of the newest vectors (plus the keyword
# candidates): the whole table at 1M rows would be a gigabyte of float32 per process.
FALLBACK_SCAN_BOUND = 100_000
# Below this cosine a vector neighbour is noise, whatever its rank (semantic mode).
MIN_SIMILARITY = 0.2
# The keyword list's best rows whose content words are counted (`term_coverage`).
COVERAGE_HEAD = 3
# Fewer stored vectors than this cannot show what noise looks like (the usual floor for
# estimating a spread): every neighbour then counts, as in a store just begun.
NULL_MIN = 30
# A hypothesis or dead end: its score times this. Not tuned (no labelled set ranks guesses
# yet): 0.8 lets a guess lead only when it matches 25% better than a known row, about one
# rank of RRF's head (1/(k+1) against 1/(k+2) at k = 5 is 0.86).
UNCERTAIN_WEIGHT = 0.8
# A row no longer true (shown only with status=all): below every current row of similar
# score, still above a current row that barely matches (it is what the user asked for).
NOT_CURRENT_WEIGHT = 0.5
UNCERTAIN = (Observation.Certainty.HYPOTHESIS.value, Observation.Certainty.DEAD_END.value)


def rank_weight(status: str, certainty: str) -> float:
    """The factor a row's score is multiplied by: 1.0 for a current row that is not a
    hypothesis or dead end (confirmed, or unknown: the offline compressor's and older rows
    rank exactly as before)."""
    weight = 1.0 if status == Observation.Status.CURRENT else NOT_CURRENT_WEIGHT
    return weight * (UNCERTAIN_WEIGHT if certainty in UNCERTAIN else 1.0)


def rank_weight_sql(alias: str) -> str:
    """`rank_weight` of the row `alias` as SQL (SQLite and PostgreSQL alike)."""
    uncertain = ", ".join(f"'{value}'" for value in UNCERTAIN)
    return (
        f"(CASE WHEN {alias}.status = '{Observation.Status.CURRENT.value}' THEN 1.0 "
        f"ELSE {NOT_CURRENT_WEIGHT} END * CASE WHEN {alias}.certainty IN ({uncertain}) "
        f"THEN {UNCERTAIN_WEIGHT} ELSE 1.0 END)"
    )


def weighted(ranked: list[tuple[float, Kind, int]]) -> list[tuple[float, Kind, int]]:
    """`ranked` with each observation's score times its `rank_weight`, best first again
    (one read of the few rows whose weight is not 1)."""
    ids = [pk for _, kind, pk in ranked if kind == "observation"]
    if not ids:
        return ranked
    off = Q(certainty__in=UNCERTAIN) | ~Q(status=Observation.Status.CURRENT)
    weights = {
        pk: rank_weight(status, certainty)
        for pk, status, certainty in Observation.objects.filter(off, pk__in=ids).values_list(
            "pk", "status", "certainty"
        )
    }
    if not weights:
        return ranked
    out = [
        (score * weights.get(pk, 1.0) if kind == "observation" else score, kind, pk)
        for score, kind, pk in ranked
    ]
    out.sort(key=lambda row: row[0], reverse=True)
    return out


class Backend(Protocol):
    def keyword(self, query: SearchQuery) -> list[SearchHit]: ...

    def keyword_ranked(self, query: SearchQuery) -> tuple[list[tuple[float, Kind, int]], bool]: ...

    def hits_by_ids(self, page: list[tuple[float, Kind, int]], text: str) -> list[SearchHit]: ...

    def term_coverage(self, rows: list[tuple[Kind, int]], text: str) -> float:
        """The largest share of the query's content words (stop words left out) that any of
        `rows` holds, as the keyword search matches words; 1.0 when the text has none."""
        ...

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


# Query texts whose vectors are kept (`embedded_text`): 384 floats each, ~0.4 MB in all.
# An agent asks the same few questions of its memory again and again within a session, and
# the encoder is the floor of every search by meaning.
QUERY_CACHE = 256
_query_vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_query_lock = threading.Lock()
# One thread that embeds a query while the keyword ranking runs (`search_mode`): the
# encoder and SQLite both release the GIL. It never touches the database (a thread's own
# connection would not see the request's transaction).
_encoder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cmem-query-embed")


def _remembered(text: str) -> tuple[str, np.ndarray] | None:
    """`text`'s vector by the configured model from the LRU, or None."""
    key = (model_version(), text)
    with _query_lock:
        cached = _query_vectors.get(key)
        if cached is None:
            return None
        _query_vectors.move_to_end(key)
        return key[0], cached


def embedded_text(text: str) -> tuple[str, np.ndarray]:
    """(model version, unit vector) of `text`, from the LRU of recent query texts when it
    is there (the model is then not even loaded), else from the model."""
    remembered = _remembered(text)
    if remembered is not None:
        return remembered
    model = get_model()
    vector = model.embed([text])[0]
    if not vector.any():  # the encoder could not answer: ask it again next time
        return model.version, vector
    vector.setflags(write=False)  # shared by every search of this text
    with _query_lock:
        _query_vectors[(model.version, text)] = vector
        while len(_query_vectors) > QUERY_CACHE:
            _query_vectors.popitem(last=False)
    return model.version, vector


def _embeddable(query: SearchQuery) -> bool:
    """Whether the query has text and some wanted kind has vectors stored."""
    if not query.text.strip():
        return False
    return bool(index.kinds_stored([kind for kind in KINDS if query.wants(kind)]))


def _usable(embedded: tuple[str, np.ndarray]) -> tuple[str, np.ndarray] | None:
    return embedded if embedded[1].any() else None


def query_vector(query: SearchQuery) -> tuple[str, np.ndarray] | None:
    """(model version, vector) of the query text, or None when it has nothing to embed or
    no wanted kind has vectors stored."""
    if not _embeddable(query):
        return None
    return _usable(embedded_text(query.text))


def _query_vector_started(query: SearchQuery) -> Future[tuple[str, np.ndarray]] | None:
    """`query_vector`, embedding on the encoder thread; None when there is nothing to embed
    (the database is read here, on the caller's thread)."""
    if not _embeddable(query):
        return None
    remembered = _remembered(query.text)
    if remembered is None:
        return _encoder.submit(embedded_text, query.text)
    # No hand-over to the thread (on a busy machine, a wait for it to be scheduled).
    done: Future[tuple[str, np.ndarray]] = Future()
    done.set_result(remembered)
    return done


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
    return weighted(ranked[:k])


def significant(
    semantic: list[tuple[float, Kind, int]],
    embedded: tuple[str, np.ndarray],
    owner: int | None = None,
) -> list[tuple[float, Kind, int]]:
    """The rows of `semantic` whose cosine stands out from noise (step 1 of the module
    docstring): z over the kind's `null_sample` (the viewer's rows, in team mode) above
    sqrt(2 ln N)."""
    model, vector = embedded
    kept: list[tuple[float, Kind, int]] = []
    stats: dict[Kind, tuple[float, float, int]] = {}
    for kind in dict.fromkeys(kind for _, kind, _ in semantic):
        sample, stored = index.null_sample(kind, model, int(vector.shape[0]), owner)
        if len(sample) < NULL_MIN:
            stats[kind] = (0.0, 0.0, stored)
            continue
        cosines = sample @ vector
        stats[kind] = (float(cosines.mean()), float(cosines.std()), stored)
    compared = max(2, sum(count for _, _, count in stats.values()))
    bar = math.sqrt(2 * math.log(compared))
    for score, kind, pk in semantic:
        mean, spread, _ = stats[kind]
        # Too few rows to know what noise looks like: every neighbour counts.
        if spread == 0.0 or (score - mean) / spread > bar:
            kept.append((score, kind, pk))
    return kept


def keyword_weight(coverage: float) -> float:
    """The keyword list's weight from its coverage (step 2): the odds of a content word being
    held, capped at 1, so a head holding half of them or more weighs in full."""
    if coverage >= 0.5:
        return 1.0
    return coverage / (1.0 - coverage)


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


def mode_note(mode: Mode, kinds: tuple[Kind, ...] = KINDS) -> str:
    """What a search in `mode` over `kinds` could not do by meaning, or "" (it ran as asked):
    the extra is missing (it answered by keyword), or some rows have no vector yet (an
    import or a model change the background sweep is still embedding: their keyword hits
    are in the answer, see `search_mode`)."""
    if mode == "keyword":
        return ""
    if not embeddings.available():
        return embeddings.unavailable_note()
    count = waiting(kinds)
    if not count:
        return ""
    return (
        f"{count:,} row(s) have no vector yet (being embedded in the background; `cmem status` "
        "counts them): search by meaning does not see them, so their keyword hits are included"
    )


def search_mode(backend: Backend, query: SearchQuery) -> list[SearchHit]:
    """`query.mode` over `backend`; no text always means newest first (keyword path)."""
    if effective_mode(query.mode) == "keyword" or not query.text.strip():
        return backend.keyword(query)
    window = query.offset + query.limit
    if query.mode == "semantic":
        semantic = semantic_ranked(backend, query, window)
        if waiting([kind for kind in KINDS if query.wants(kind)]):
            # Rows without a vector can only be found by their words: fused in, not lost.
            keyword, _ = backend.keyword_ranked(replace(query, limit=window, offset=0))
            fused = fuse(
                [(kind, pk) for _, kind, pk in semantic],
                [(kind, pk) for _, kind, pk in keyword],
                k=RRF_K,
            )
            semantic = [(score, kind, pk) for score, (kind, pk) in fused]
        return backend.hits_by_ids(semantic[query.offset : window], query.text)
    depth = max(CANDIDATES, window)
    # The query is embedded on the encoder thread while the keyword list is ranked here.
    pending = _query_vector_started(query)
    keyword, _ = backend.keyword_ranked(replace(query, limit=depth, offset=0))
    embedded = _usable(pending.result()) if pending is not None else None
    if embedded is None:
        return _keyword_page(backend, query, keyword)
    nearest = semantic_ranked(backend, query, depth, keyword, embedded)
    semantic = significant(nearest, embedded, query.owner)
    if not semantic:
        if keyword:
            return _keyword_page(backend, query, keyword)
        # No row holds the words either: the nearest rows are the best answer there is.
        semantic = nearest
    head = [(kind, pk) for _, kind, pk in keyword[:COVERAGE_HEAD]]
    # Keyword first: a tie between the two lists' heads goes to the row holding the words.
    fused = fuse(
        [(kind, pk) for _, kind, pk in keyword],
        [(kind, pk) for _, kind, pk in semantic],
        weights=(keyword_weight(backend.term_coverage(head, query.text)) if head else 0.0, 1.0),
        k=RRF_K,
    )
    page = [(score, kind, pk) for score, (kind, pk) in fused[query.offset : window]]
    return backend.hits_by_ids(page, query.text)


def _keyword_page(
    backend: Backend, query: SearchQuery, keyword: list[tuple[float, Kind, int]]
) -> list[SearchHit]:
    """What keyword search answers, from the keyword list hybrid ranked already (to
    `CANDIDATES`, at least the page): only the page's rows are read, not ranked again."""
    return backend.hits_by_ids(keyword[query.offset : query.offset + query.limit], query.text)
