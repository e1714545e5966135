"""Run inside `cmem manage shell` on a database migrated with pgvector (tests/team/test_pgvector.py).

Team mode's owner scope on the pgvector path: 400 observations with vectors made here
(not by the model: the test places each one at a known cosine to the query), a quarter of
them one teammate's, two a newcomer's, the rest a third user's. Asks `nearest` as each of
the first two, records which statements ran, and compares with the exact answer computed
in numpy. Prints one JSON object on the last line; the test asserts on it.
"""

from __future__ import annotations

import json

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory.models import Observation, Session
from memory.retrieval.embeddings import pgvector
from memory.retrieval.embeddings.model import get_model
from memory.retrieval.search import postgres
from memory.retrieval.search.query import SearchQuery

rng = np.random.default_rng(33)
model = get_model()
query = rng.standard_normal(pgvector.DIM).astype(np.float32)
query /= np.linalg.norm(query)


def at_cosine(cos: float) -> np.ndarray:
    """A unit vector whose cosine to `query` is `cos`."""
    other = rng.standard_normal(pgvector.DIM).astype(np.float32)
    other -= other.dot(query) * query
    other /= np.linalg.norm(other)
    return cos * query + np.sqrt(1 - cos * cos) * other


users = get_user_model().objects
teammate, newcomer, other = (users.create_user(n) for n in ("teammate", "newcomer", "other"))
sessions = {
    user.pk: Session.objects.create(session_id=f"s-{user.username}", project="app", owner=user)
    for user in (teammate, newcomer, other)
}
owners: list[int] = [teammate.pk] * 100 + [newcomer.pk] * 2 + [other.pk] * 298
rng.shuffle(owners)
vectors: dict[int, np.ndarray] = {}
near_cos = iter(np.linspace(0.95, 0.6, 30))
newcomer_cos = iter((0.5, 0.4))
for i, owner in enumerate(owners):
    obs = Observation.objects.create(
        session=sessions[owner], project="app", title=f"row {i}", narrative="x"
    )
    if owner == newcomer.pk:
        vectors[obs.pk] = at_cosine(next(newcomer_cos))
    elif owner == other.pk and i % 8 == 0:
        # A third user's rows nearest of all: the walk must pass over them.
        vectors[obs.pk] = at_cosine(0.99)
    elif owner == teammate.pk and i % 3 == 0:
        vectors[obs.pk] = at_cosine(next(near_cos, 0.3))
    else:
        vectors[obs.pk] = at_cosine(float(rng.uniform(-0.1, 0.1)))
now = timezone.now()
with connection.cursor() as cursor:
    cursor.executemany(
        "INSERT INTO memory_embedding (kind, object_id, model, vector, created) VALUES (%s, %s, %s, %s, %s)",
        [
            ("observation", pk, model.version, v.astype(np.float16).tobytes(), now)
            for pk, v in vectors.items()
        ],
    )
pgvector.write("observation", list(vectors), np.array(list(vectors.values()), dtype=np.float32))
owner_of = {obs.pk: obs.session.owner_id for obs in Observation.objects.select_related("session")}
out: dict = {"ready": pgvector.ready()}
for user, k in ((teammate, 10), (newcomer, 5), (newcomer, 4)):
    with CaptureQueriesContext(connection) as ctx:
        found = postgres.nearest(
            "observation", SearchQuery(owner=user.pk), model.version, query, k, []
        )
    mine = [pk for pk in vectors if owner_of[pk] == user.pk]
    exact = sorted(mine, key=lambda pk: -float(vectors[pk] @ query))
    out[f"{user.username}-{k}"] = {
        "found": [pk for _, pk in found],
        "owners": sorted({owner_of[pk] for _, pk in found}),
        "exact": [pk for pk in exact if float(vectors[pk] @ query) > 0.2][:k],
        "scores": [round(score, 4) for score, _ in found],
        "cosines": [round(float(vectors[pk] @ query), 4) for pk in exact[:k]],
        "walked": any("WITH near AS" in q["sql"] for q in ctx.captured_queries),
        "scanned": any("WITH c AS MATERIALIZED" in q["sql"] for q in ctx.captured_queries),
    }
out["user_ids"] = {u.username: u.pk for u in (teammate, newcomer, other)}
print(json.dumps(out))
