"""Run inside `cmem manage shell` on a database migrated with pgvector (tests/team/test_pgvector.py).

Seeds rows, embeds them through the consumer's code, searches in every mode with and
without filters, checks the query plans, then deletes rows the ways cmem does (forget,
prune, a session's cascade) and searches again. Prints one JSON object on the last line;
the test asserts on it. Not a test itself: it needs the server the test started.
"""

from __future__ import annotations

import json
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from memory.housekeeping.forget import ForgetRequest, observations_forget
from memory.housekeeping.observations_prune import observations_prune
from memory.models import Embedding, Observation, Session
from memory.retrieval.embeddings import pgvector, store
from memory.retrieval.embeddings.model import get_model
from memory.retrieval.search.query import SearchQuery
from memory.retrieval.search.service import search

PARAPHRASE = "why did money given back to buyers disagree with what they paid at purchase"
out: dict = {"vendor": connection.vendor, "ready": pgvector.ready()}

shop = Session.objects.create(session_id="s-shop", project="shop")
infra = Session.objects.create(session_id="s-infra", project="infra")
old = Session.objects.create(session_id="s-old", project="legacy")
ids = {
    "refunds": Observation.objects.create(
        session=shop, project="shop", type="bugfix",
        title="Refunds reuse compute_total() so partial refunds match checkout",
        narrative="Refund amounts were computed with their own rounding; the refund path now calls compute_total().",
    ).pk,
    "webhooks": Observation.objects.create(
        session=shop, project="shop", type="feature", title="Stripe webhook retries created duplicate orders",
        narrative="Idempotency key stored per event id.",
    ).pk,
    "redis": Observation.objects.create(
        session=infra, project="infra", type="bugfix", title="Redis connection pool exhausted under load",
        narrative="A shared pool with max 50 connections fixed the spikes.",
    ).pk,
    "refund_infra": Observation.objects.create(
        session=infra, project="infra", type="bugfix",
        title="Refund reconciliation job paid back the wrong amount",
        narrative="Money returned to customers differed from the purchase total; the job now reads compute_total().",
    ).pk,
    "old": Observation.objects.create(
        session=old, project="legacy", type="change", title="Legacy refund export to CSV",
        narrative="Old refund amounts exported for accounting.",
        created=timezone.now() - timedelta(days=400),
    ).pk,
}  # fmt: skip
out["ids"] = ids
out["embedded"] = store.embed_pending()
with connection.cursor() as cursor:
    cursor.execute(
        "SELECT count(*), count(embedding) FROM memory_embedding WHERE kind = 'observation'"
    )
    out["rows"], out["column_filled"] = cursor.fetchone()
    cursor.execute(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'memory_embedding'::regclass AND attname = 'embedding'"
    )
    out["column_type"] = cursor.fetchone()[0]


def found(**kwargs):
    return [h.id for h in search(SearchQuery(kinds=("observation",), **kwargs))]


out["semantic"] = found(text=PARAPHRASE, mode="semantic")
out["hybrid"] = found(text=PARAPHRASE, mode="hybrid")
out["keyword"] = found(text=PARAPHRASE, mode="keyword")
out["hybrid_words"] = found(text="webhook idempotency", mode="hybrid")
out["semantic_shop"] = found(text=PARAPHRASE, mode="semantic", project="shop")
out["semantic_infra"] = found(text=PARAPHRASE, mode="semantic", project="infra")
out["hybrid_infra"] = found(text=PARAPHRASE, mode="hybrid", project="infra")
out["semantic_feature"] = found(text=PARAPHRASE, mode="semantic", types=("feature",))
out["semantic_recent"] = found(
    text=PARAPHRASE, mode="semantic", since=timezone.now() - timedelta(days=30)
)

# Nothing went through the fallback's in-memory scan.
from memory.retrieval.embeddings import index  # noqa: E402

out["fallback_matrices"] = len(index._cache)

# The plans: unscoped by the kind's HNSW index, scoped by an exact ranking of the candidates.
vector = pgvector.literal(get_model().embed([PARAPHRASE])[0])
with connection.cursor() as cursor:
    cursor.execute("SET enable_seqscan = off")  # five rows: make the planner show its index choice
    cursor.execute(
        "EXPLAIN SELECT object_id FROM memory_embedding WHERE kind = 'observation' AND model = %s "
        "AND embedding IS NOT NULL ORDER BY embedding <=> %s::vector LIMIT 10",
        [get_model().version, vector],
    )
    out["plan"] = "\n".join(row[0] for row in cursor.fetchall())
    cursor.execute("SET enable_seqscan = on")

# Vectors follow their rows.
observations_forget(request=ForgetRequest(query="Stripe webhook", dry_run=False))
observations_prune(older_than_days=365, project=None, dry_run=False)
Session.objects.filter(project="infra").delete()
with connection.cursor() as cursor:
    cursor.execute("SELECT object_id FROM memory_embedding ORDER BY object_id")
    out["left"] = [row[0] for row in cursor.fetchall()]
out["semantic_after"] = found(text=PARAPHRASE, mode="semantic")
out["hybrid_after"] = found(text="webhook idempotency", mode="hybrid")
out["embedding_rows"] = Embedding.objects.count()
print(json.dumps(out))
