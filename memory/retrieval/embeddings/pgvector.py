"""pgvector in team mode: a `vector(384)` column beside the blob, HNSW indexes, cosine distance.

Which path a PostgreSQL database takes is decided at migrate time (migration 0010 calls
`install`): a server that offers the `vector` extension gets it, the `embedding` column and
one partial HNSW index per row kind; a server without it keeps only the float16 blob, and
the search service scans those instead (`postgres.py`'s fallback). The blob is always
written, so `cmem export`, the fallback and a later `install` all read one source.

Queries come in two shapes, both by cosine distance (`<=>`):
- unscoped (no filter, no owner): the kind's HNSW index, `ef_search` raised to the depth
  asked, so the index hands back at least that many neighbours;
- scoped (filters, or team mode's owner): first the kind's HNSW index, its nearest
  `ef` rows kept when they pass the filters (the caller passes that SQL: project, type,
  dates, file, ownership). When at least `k` pass, they are the scope's `k` nearest, as
  exactly as the walk is (an unscoped query's precision): every row of the scope not among
  them is further than all `ef`. A broad scope (a teammate's
  share of a team's rows) is answered so in milliseconds at 1M rows. When fewer pass
  (a selective filter), `ef` is raised to the most pgvector walks (1000), whose rows
  answer when they are at least half of `k`; when even that leaves fewer, the same candidate set the keyword search's filters select,
  newest first and bounded, is materialised and ranked exactly: an index walk alone would
  silently lose a selective filter's rows. pgvector 0.8's iterative scans would let the
  walk go on until `k` pass; 0.6 (the dev extra's) stops at `ef`.
Vectors of another dimension (a configured local model) are not written to the column;
such a database searches by the fallback scan until the default model is back.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError, connection, transaction

from memory.retrieval.embeddings import KINDS, Kind

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

# The bundled model's width (migration 0014 resized the column from the earlier 256).
DIM = 384
# HNSW build parameters: pgvector's defaults (m 16, ef_construction 64) measured well here.
EF_SEARCH_MIN = 100
# The largest `hnsw.ef_search` pgvector accepts: a scoped walk's last try.
EF_SEARCH_MAX = 1000
# A scoped walk's first `ef`: this many times `k`, so a scope holding an eighth of the rows
# (with 4 to 8 people on a team, each one's share) is answered by one walk.
SCOPED_EF_PER_K = 8
_BATCH = 1000
_ready: dict[str, bool] = {}


def _key(connection: Any) -> str:
    return f"{connection.alias}:{connection.settings_dict.get('NAME')}"


def literal(vector: np.ndarray) -> str:
    """pgvector's text form, `[0.1,0.2,…]` (no client-side adapter needed)."""
    return "[" + ",".join(f"{x:.6g}" for x in vector.tolist()) + "]"


def install(connection: Any) -> bool:
    """Create the extension, column and indexes when the server offers pgvector; True if so.

    Runs inside the migration's transaction: a role that may not create the extension
    fails in a savepoint, is logged, and leaves the database on the fallback path."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
        if cursor.fetchone() is None:
            log.info("pgvector is not installed on this server: vectors stay in the blob column")
            return False
        try:
            with transaction.atomic(using=connection.alias):
                cursor.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except DatabaseError as exc:
            log.warning("pgvector is available but cannot be created here (%s)", exc)
            return False
        cursor.execute(
            f"ALTER TABLE memory_embedding ADD COLUMN IF NOT EXISTS embedding vector({DIM})"
        )
        _fill_from_blobs(cursor)
        for kind in KINDS:
            cursor.execute(
                f"CREATE INDEX IF NOT EXISTS embedding_{kind}_hnsw ON memory_embedding "
                f"USING hnsw (embedding vector_cosine_ops) WHERE kind = '{kind}'"
            )
    _ready.clear()
    return True


def resize(connection: Any) -> None:
    """A column made for another width (the static model's 256) is dropped with its indexes
    and made again at DIM, filled from the blobs that have that width: the rows of the
    earlier model are re-embedded by the background sweep, and fill it then (`write`)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'memory_embedding'::regclass "
            "AND attname = 'embedding' AND NOT attisdropped"
        )
        row = cursor.fetchone()
        if row is None or int(row[0]) == DIM:
            return
        for kind in KINDS:
            cursor.execute(f"DROP INDEX IF EXISTS embedding_{kind}_hnsw")
        cursor.execute("ALTER TABLE memory_embedding DROP COLUMN embedding")
    install(connection)


def _fill_from_blobs(cursor: Any) -> None:
    """Rows stored before pgvector came: their float16 blobs into the column."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    last = 0
    while True:
        cursor.execute(
            "SELECT id, vector FROM memory_embedding WHERE id > %s AND embedding IS NULL "
            "AND octet_length(vector) = %s ORDER BY id LIMIT %s",
            [last, DIM * 2, _BATCH],
        )
        rows = cursor.fetchall()
        if not rows:
            return
        ids = [row[0] for row in rows]
        texts = [literal(np.frombuffer(bytes(row[1]), dtype=np.float16)) for row in rows]
        cursor.execute(
            "UPDATE memory_embedding e SET embedding = v.vec::vector "
            "FROM unnest(%s::bigint[], %s::text[]) AS v(id, vec) WHERE e.id = v.id",
            [ids, texts],
        )
        last = ids[-1]


def ready() -> bool:
    """This database has the `embedding` column (pgvector was installed at migrate time)."""
    if connection.vendor != "postgresql":
        return False
    key = _key(connection)
    if key not in _ready:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT 1 FROM information_schema.columns WHERE table_name = 'memory_embedding' "
                "AND column_name = 'embedding' AND table_schema = current_schema()"
            )
            _ready[key] = cursor.fetchone() is not None
    return _ready[key]


def write(kind: Kind, object_ids: list[int], vectors: np.ndarray) -> None:
    """Fill the column for rows just stored (same transaction as their blobs)."""
    if not object_ids or vectors.shape[1] != DIM or not ready():
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memory_embedding e SET embedding = v.vec::vector "
            "FROM unnest(%s::bigint[], %s::text[]) AS v(id, vec) "
            "WHERE e.kind = %s AND e.object_id = v.id",
            [object_ids, [literal(v) for v in vectors], kind],
        )


def _ef_search(connection: Any, cursor: Any, value: int) -> None:
    """`hnsw.ef_search` for this session, set only when it changes: the index hands back at
    most that many neighbours, so it must cover the depth asked (a SET is a round trip)."""
    raw = connection.connection
    if getattr(raw, "_cmem_ef_search", None) != value:
        cursor.execute(f"SET hnsw.ef_search = {int(value)}")
        raw._cmem_ef_search = value


def nearest(
    kind: Kind,
    model: str,
    query: np.ndarray,
    *,
    k: int,
    scope: tuple[str, list[Any]] | None,
    min_score: float,
    allowed: tuple[str, list[Any]] | None = None,
) -> list[tuple[float, int]] | None:
    """(cosine, id) of the `k` nearest rows, best first; None when this database or this
    vector cannot take the pgvector path (the caller scans the blobs instead).

    `scope`: SQL selecting the candidate ids, newest first and bounded (with its
    parameters), or None for all rows. `allowed`: SQL selecting `o.id` from the kind's
    table (aliased `o`) under the same filters, unbounded, to which ` AND o.id IN (…)` can
    be added: with it, a scoped query walks the index first (module docstring)."""
    if k <= 0 or query.shape[0] != DIM or not ready():
        return None
    vec = literal(query)
    assert kind in KINDS  # inlined: the partial index's predicate must match a literal
    with connection.cursor() as cursor:
        if scope is None:
            _ef_search(connection, cursor, max(EF_SEARCH_MIN, min(k, 1000)))
            cursor.execute(
                "SELECT object_id, 1 - (embedding <=> %s::vector) FROM memory_embedding "
                f"WHERE kind = '{kind}' AND model = %s AND embedding IS NOT NULL "
                "ORDER BY embedding <=> %s::vector LIMIT %s",
                [vec, model, vec, k],
            )
        else:
            if allowed is not None:
                for ef in dict.fromkeys(
                    (min(EF_SEARCH_MAX, max(EF_SEARCH_MIN, SCOPED_EF_PER_K * k)), EF_SEARCH_MAX)
                ):
                    rows = _walk(cursor, kind, model, vec, k, ef, allowed)
                    # The widest walk's rows are the scope's nearest too, only fewer than k:
                    # half of k or more answer (the ranks past them weigh least in a fusion),
                    # and the exact scan of a few percent of 1M rows costs most of a second.
                    if len(rows) >= k or (ef == EF_SEARCH_MAX and 2 * len(rows) >= k):
                        return [
                            (float(score), int(pk))
                            for pk, score in rows
                            if float(score) > min_score
                        ]
            sql, params = scope
            # Ordered by the score expression, not by `embedding <=> q`: that keeps the
            # planner off the approximate index, so every scoped candidate is ranked.
            cursor.execute(
                f"WITH c AS MATERIALIZED ({sql}) "
                "SELECT e.object_id, 1 - (e.embedding <=> %s::vector) AS score "
                "FROM memory_embedding e JOIN c ON c.id = e.object_id "
                f"WHERE e.kind = '{kind}' AND e.model = %s AND e.embedding IS NOT NULL "
                "ORDER BY score DESC, e.object_id DESC LIMIT %s",
                [*params, vec, model, k],
            )
        rows = cursor.fetchall()
    return [(float(score), int(pk)) for pk, score in rows if float(score) > min_score]


def _walk(
    cursor: Any, kind: Kind, model: str, vec: str, k: int, ef: int, allowed: tuple[str, list[Any]]
) -> list[tuple[int, float]]:
    """(id, cosine) of the `k` nearest of the index's `ef` nearest rows that `allowed` keeps.

    The walk is materialised first, so the filters run on its `ef` rows only (the planner
    would otherwise be free to read the scope and rank it, the exact scan's cost)."""
    _ef_search(connection, cursor, ef)
    sql, params = allowed
    cursor.execute(
        "WITH near AS MATERIALIZED ("
        "SELECT object_id, embedding <=> %s::vector AS distance FROM memory_embedding "
        f"WHERE kind = '{kind}' AND model = %s AND embedding IS NOT NULL "
        "ORDER BY embedding <=> %s::vector LIMIT %s) "
        "SELECT near.object_id, 1 - near.distance FROM near "
        f"WHERE near.object_id IN ({sql} AND o.id IN (SELECT object_id FROM near)) "
        "ORDER BY near.distance, near.object_id DESC LIMIT %s",
        [vec, model, vec, ef, *params, k],
    )
    return cursor.fetchall()
