"""Embedding rows: which rows need a vector, making and storing vectors in batches.

Called by the consumer after it stores observations and summaries (never on a hook's
path), by the periodic sweep (prompts, imports, and rows whose vector came from another
model), and by `cmem embeddings backfill`. Every batch is its own transaction, so a run
killed at any point resumes where it stopped: what still lacks a current vector is simply
what the next run finds.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterable
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from memory import config
from memory.models import Embedding, Observation, Prompt, Summary
from memory.retrieval.embeddings import KINDS, TABLES, Kind, index, installed
from memory.retrieval.embeddings.model import get_model, model_version

BATCH = 256
# The most of a row's text that is embedded (the model reads 512 tokens at most anyway).
_TEXT_CAP = 4000


def _join(*parts: Any) -> str:
    out: list[str] = []
    for part in parts:
        if isinstance(part, str) and part.startswith("[") and part.endswith("]"):
            with contextlib.suppress(ValueError):
                part = json.loads(part)
        if isinstance(part, list):
            part = "; ".join(str(p) for p in part)
        if part:
            out.append(str(part))
    return "\n".join(out)[:_TEXT_CAP]


def texts(kind: Kind, ids: list[int]) -> dict[int, str]:
    """The text embedded for each row: what a later question would be about."""
    rows: Any
    if kind == "observation":
        rows = Observation.objects.filter(pk__in=ids).values_list(
            "pk", "title", "subtitle", "narrative", "facts", "concepts"
        )
    elif kind == "summary":
        rows = Summary.objects.filter(pk__in=ids).values_list(
            "pk", "request", "investigated", "learned", "completed", "next_steps", "notes"
        )
    else:
        rows = Prompt.objects.filter(pk__in=ids).values_list("pk", "text")
    return {row[0]: _join(*row[1:]) for row in rows}


def pending_ids(kind: Kind, model_version: str, *, limit: int, after: int = 0) -> list[int]:
    """Rows of `kind` with no vector of `model_version`, oldest first."""
    table = TABLES[kind]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT t.id FROM {table} t LEFT JOIN memory_embedding e "
            "ON e.kind = %s AND e.object_id = t.id AND e.model = %s "
            "WHERE e.id IS NULL AND t.id > %s ORDER BY t.id LIMIT %s",
            [kind, model_version, after, limit],
        )
        return [row[0] for row in cursor.fetchall()]


def pending_count(kind: Kind, model_version: str) -> int:
    table = TABLES[kind]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM {table} t LEFT JOIN memory_embedding e "
            "ON e.kind = %s AND e.object_id = t.id AND e.model = %s WHERE e.id IS NULL",
            [kind, model_version],
        )
        return int(cursor.fetchone()[0])


def embed_rows(kind: Kind, ids: list[int]) -> int:
    """Embed and store these rows (replacing any older vector); returns how many."""
    # optional dependency (numpy: the embeddings extra)
    import numpy as np

    if not ids:
        return 0
    model = get_model()
    found = texts(kind, ids)
    order = list(found)
    if not order:
        return 0
    vectors = model.encode([found[pk] for pk in order]).astype(np.float16)
    created = connection.ops.adapt_datetimefield_value(timezone.now())
    with transaction.atomic():
        # Delete + insert rather than update: a new row id tells the vector index cache that
        # this kind changed (see index.py).
        Embedding.objects.filter(kind=kind, object_id__in=order).delete()
        # One executemany, not bulk_create: the ORM's per-field preparation of 256 model
        # instances cost more CPU than embedding them (a third of the consumer's time per row).
        with connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO memory_embedding (kind, object_id, model, vector, created) "
                "VALUES (%s, %s, %s, %s, %s)",
                [
                    (kind, pk, model.version, vec.tobytes(), created)
                    for pk, vec in zip(order, vectors, strict=True)
                ],
            )
        if connection.vendor == "postgresql":
            # PostgreSQL only
            from memory.retrieval.embeddings import pgvector

            pgvector.write(kind, order, vectors.astype(np.float32))
    return len(order)


def _fingerprint(kind: Kind, version: str) -> list[int]:
    """Rows, newest row id and vectors of `version` for `kind`, each read from an index
    (under 1 MB of pages at 10k rows; the pending query reads both tables, 12 MB)."""
    table = TABLES[kind]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table}")
        rows = cursor.fetchone()[0]
        cursor.execute(f"SELECT max(id) FROM {table}")
        newest = cursor.fetchone()[0] or 0
        cursor.execute(
            "SELECT count(*) FROM memory_embedding WHERE kind = %s AND model = %s", [kind, version]
        )
        vectors = cursor.fetchone()[0]
    return [int(rows), int(newest), int(vectors)]


def _settled_path() -> Any:
    return config.data_dir() / "state" / "embeddings-settled.json"


def _settled_read() -> dict[str, Any]:
    try:
        data = json.loads(_settled_path().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _settled_write(data: dict[str, Any]) -> None:
    path = _settled_path()
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, exist_ok=True)
        config.write_atomic(path, json.dumps(data).encode())


def embed_pending(
    kinds: Iterable[Kind] = KINDS,
    *,
    limit: int | None = None,
    seconds: float | None = None,
    progress: Callable[[Kind, int], None] | None = None,
    skip_settled: bool = False,
) -> int:
    """Embed rows lacking a current vector, batch by batch; `limit` (rows) and `seconds`
    (no new batch once they have passed) bound one call.

    The consumer's minute sweep calls this: it asks with the model's version only, so the
    model (numpy, the 32 MB table) is loaded when there is something to embed, not before.
    With `skip_settled` (the sweep) a kind whose rows, newest id and vectors are as they were
    when a sweep last found nothing pending is skipped without the pending query: ids only
    grow, so any new row moves the newest id, a deletion the count, a vector the third."""
    if not installed():
        return 0  # no embeddings extra: search answers by keyword, the sweep has nothing to do
    version = model_version()
    settled = _settled_read() if skip_settled else {}
    done = 0
    deadline = None if seconds is None else time.monotonic() + seconds
    for kind in kinds:
        mark = _fingerprint(kind, version) if skip_settled else []
        if skip_settled and settled.get(kind) == [version, *mark]:
            continue
        found, exhausted = 0, False
        after = 0
        while (limit is None or done < limit) and (deadline is None or time.monotonic() < deadline):
            size = BATCH if limit is None else min(BATCH, limit - done)
            ids = pending_ids(kind, version, limit=size, after=after)
            if not ids:
                exhausted = True
                break
            count = embed_rows(kind, ids)
            after = ids[-1]
            done += count
            found += len(ids)
            if progress:
                progress(kind, count)
        if skip_settled and exhausted and not found:
            settled[kind] = [version, *mark]
            _settled_write(settled)
    return done


def embed_session(session_pk: int) -> int:
    """The consumer's step after storing a session's observations and summaries (a no-op
    without the embeddings extra: search answers by keyword then)."""
    if not installed():
        return 0
    model = get_model()
    done = 0
    for kind, qs in (
        ("observation", Observation.objects.filter(session_id=session_pk)),
        ("summary", Summary.objects.filter(session_id=session_pk)),
        ("prompt", Prompt.objects.filter(session_id=session_pk)),
    ):
        have = set(
            Embedding.objects.filter(
                kind=kind, model=model.version, object_id__in=qs.values("pk")
            ).values_list("object_id", flat=True)
        )
        ids = [pk for pk in qs.values_list("pk", flat=True) if pk not in have]
        for start in range(0, len(ids), BATCH):
            done += embed_rows(kind, ids[start : start + BATCH])  # type: ignore[arg-type]
    return done


# (embedding generation, newest row id) -> rows waiting, per database, kind and model: a
# search asks on every call, and only a new row or vector makes the counts worth reading.
_waiting: dict[tuple[str, Kind, str], tuple[tuple[int, int], int]] = {}


def waiting(kinds: Iterable[Kind] = KINDS) -> int:
    """Rows of `kinds` with no vector of the configured model yet (an import, a model
    change, rows the sweep has not reached): every row gets one, an empty text a zero
    vector, and a vector goes with its row, so it is rows minus vectors."""
    if not installed():
        return 0
    version = model_version()
    generation = index.current_generation()
    db = f"{connection.alias}:{connection.settings_dict.get('NAME')}"
    total = 0
    for kind in kinds:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT max(id) FROM {TABLES[kind]}")
            newest = int(cursor.fetchone()[0] or 0)
        key = (db, kind, version)
        cached = _waiting.get(key)
        if cached is None or cached[0] != (generation, newest):
            rows, _, vectors = _fingerprint(kind, version)
            cached = ((generation, newest), max(0, rows - vectors))
            _waiting[key] = cached
        total += cached[1]
    return total
