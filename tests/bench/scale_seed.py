"""Seeding `python -m tests.bench scale`'s store: N observations in bulk, as real use leaves them.

Run in a child with Django set up on the benchmark's database (`python -m tests.bench.scale
seed N PROJECT_DIR`). What it writes, per N:

- sessions of PER_SESSION observations each, spread over PROJECTS projects and their files
  (`src/modNN/fileNN.py`); every tenth session is in the gate's project (the scratch folder
  the benchmark made, whose GATE_FILES files exist on disk), so at 1M a gate file has
  about 1,000 observations of history;
- per observation: a typed title ("Fixed …", "Added …"), a subtitle, two facts naming its
  file, a narrative, a concept, the file read, one ObservationFile row; per session one
  summary; text drawn from a Zipf vocabulary (query words at ranks 100-135);
- with the embeddings extra, one synthetic unit vector per observation and summary, float16
  under the configured model's version, as `store.embed_rows` stores them (and into
  pgvector's column where the database has it): what costs time and memory is the count of
  vectors, not their meaning, and embedding 1M rows here would take hours. Each is a real
  embedding of one of TOPICS (the bench's queries among them) mixed with random noise, so a
  semantic search finds rows above the store's noise and returns (and hydrates) hits, as
  it does on real memory; pure noise would score nothing and measure a search that returns
  nothing.

SQLite: one executemany per batch with the FTS insert triggers dropped, then FTS5's
`rebuild` and the triggers made again from their own SQL, so the FTS tables end as real
use leaves them (their content is the rows; only the segment layout is a merged one).
PostgreSQL: COPY per batch with the heavy tables' secondary indexes (GIN, HNSW, b-trees
not backing a constraint) dropped first and made again from their own definitions after.
"""

from __future__ import annotations

import json
import random
import time
from datetime import timedelta
from typing import Any

from tests.bench.harness import django_setup, zipf_cum_weights

PROJECTS = 40
PER_SESSION = 50
GATE_FILES = 100
GATE_SHARE = 10  # every GATE_SHARE-th session is in the gate's project
BATCH = 20_000
TECH = [
    "cache", "migration", "gate", "session", "token", "search", "index", "worker", "queue",
    "redis", "postgres", "hook", "summary", "parser", "config", "deploy", "schema", "router",
    "middleware", "timeout", "retry", "lock", "transaction", "compress", "observation",
    "prompt", "context", "spool", "ledger", "admin", "template", "static", "logging",
    "metrics", "auth",
]  # fmt: skip
FILLER = [
    "the", "a", "to", "of", "and", "in", "for", "with", "is", "on", "file", "function",
    "value", "now", "when", "returns", "uses", "test", "line", "call",
]  # fmt: skip
VERBS = {
    "bugfix": "Fixed",
    "feature": "Added",
    "change": "Changed",
    "discovery": "Found",
    "decision": "Chose",
    "refactor": "Reworked",
}
CONCEPTS = ["gotcha", "pattern", "how-it-works", "trade-off", "why-it-exists", "problem-solution"]
# What the synthetic vectors are about: the bench's queries and pairs of common words.
TOPICS = [
    "cache", "migration", "session token", "redis queue timeout", "postgres schema migration",
    "gate", "middleware auth", "compress", "retry lock", "deploy or rollback",
    "why does the worker retry the queue after a timeout",
    "fixed the cache invalidation in the parser",
    *(f"{a} {b}" for a, b in zip(TECH[::2], TECH[1::2], strict=False)),
]  # fmt: skip
# How much of a synthetic vector is its topic (cosine with it); the rest is noise.
TOPIC_WEIGHT = 0.7
# The heavy tables whose secondary indexes a PostgreSQL seed drops and builds again after.
PG_BULK_TABLES = ("memory_observation", "memory_observationfile", "memory_embedding")


def vocabulary(rng: random.Random) -> tuple[list[str], list[float]]:
    """~20k words with Zipf frequencies: filler on top, the query words at ranks 100-135,
    so `cache` is in a few percent of rows, as a common term of real memory is."""
    syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "su", "da", "fi", "go", "ba"]
    words: list[str] = list(FILLER)
    seen = set(words) | set(TECH)
    while len(words) < 20_000:
        word = "".join(rng.choice(syllables) for _ in range(rng.randint(2, 5)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    words[100:100] = TECH
    return words, zipf_cum_weights(len(words))


def _pool(rng: random.Random, words: list[str], cum: list[float], length: int) -> list[str]:
    # Drawing 1M rows word by word costs minutes of Python; rows pick from pools instead.
    return [" ".join(rng.choices(words, cum_weights=cum, k=length)) for _ in range(40_000)]


def project_names(gate_project: str) -> list[str]:
    return [f"github.com/acme/service-{i:02d}" for i in range(PROJECTS)] + [gate_project]


def session_project(index: int, projects: list[str]) -> str:
    if index % GATE_SHARE == 0:
        return projects[-1]
    return projects[(index * 7) % PROJECTS]


class _Writer:
    """Rows of one model into its table in bulk: COPY on PostgreSQL, executemany on SQLite."""

    def __init__(self, model: Any, connection: Any, *, with_id: bool = True) -> None:
        self.fields = [f for f in model._meta.concrete_fields if with_id or not f.primary_key]
        self.table = model._meta.db_table
        self.connection = connection
        self.pg = connection.vendor == "postgresql"
        self.columns = ", ".join(f.column for f in self.fields)

    def row(self, values: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(self._prep(f, values) for f in self.fields)

    def _prep(self, field: Any, values: dict[str, Any]) -> Any:
        value = values.get(field.name, values.get(field.attname, field.get_default()))
        if field.get_internal_type() == "JSONField":
            return json.dumps(value)
        if self.pg:
            return value  # COPY adapts ints, strings, bytes and aware datetimes itself
        return field.get_db_prep_save(value, self.connection)

    def write(self, cursor: Any, rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        if self.pg:
            sql = f"COPY {self.table} ({self.columns}) FROM STDIN"
            with self.connection.connection.cursor() as raw, raw.copy(sql) as copy:
                for row in rows:
                    copy.write_row(row)
            return
        marks = ", ".join(["%s"] * len(self.fields))
        cursor.executemany(f"INSERT INTO {self.table} ({self.columns}) VALUES ({marks})", rows)


def _unit_vectors(nrng: Any, topics: Any, count: int) -> Any:
    """`count` float16 unit vectors, each TOPIC_WEIGHT of a random topic plus noise."""
    # numpy is the embeddings extra's; the caller checked it is installed
    import numpy as np

    noise = nrng.standard_normal((count, topics.shape[1])).astype(np.float32)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    picked = topics[nrng.integers(0, len(topics), count)]
    vectors = TOPIC_WEIGHT * picked + (1 - TOPIC_WEIGHT**2) ** 0.5 * noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors.astype(np.float16)


def vectors_possible() -> bool:
    """numpy and onnxruntime (the embeddings extra): the model embeds the topics."""
    import importlib.util

    return all(importlib.util.find_spec(name) for name in ("numpy", "onnxruntime"))


def child_seed(size: int, project_dir: str) -> dict[str, Any]:
    django_setup()
    # After django.setup(), in the child: these import Django models.
    from django.db import connection, transaction
    from django.utils import timezone

    from memory.models import Embedding, Observation, ObservationFile, Session, Summary
    from memory.projects import project_for_cwd
    from memory.retrieval.embeddings import pgvector
    from memory.retrieval.embeddings.model import model_version

    rng = random.Random(9)
    words, cum = vocabulary(rng)
    pools = {k: _pool(rng, words, cum, k) for k in (6, 8, 10, 30)}

    def text(k: int) -> str:
        pool = pools[k]
        return pool[rng.randrange(len(pool))]

    gate_project = project_for_cwd(project_dir).name
    projects = project_names(gate_project)
    n_sessions = max(1, -(-size // PER_SESSION))
    now = timezone.now()
    span = timedelta(seconds=30)
    started = time.perf_counter()
    sessions = Session.objects.bulk_create(
        [
            Session(
                session_id=f"scale-{i}",
                project=session_project(i, projects),
                project_root=project_dir if i % GATE_SHARE == 0 else "",
                cwd=project_dir if i % GATE_SHARE == 0 else "",
                status="completed",
                started=now - span * (size - i * PER_SESSION),
            )
            for i in range(n_sessions)
        ],
        batch_size=5000,
    )
    session_pks = [s.pk for s in sessions]
    first_obs = (Observation.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1
    first_summary = (Summary.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1
    with_vectors = vectors_possible()
    version = model_version()
    nrng: Any = None
    topics: Any = None
    if with_vectors:
        # numpy is the embeddings extra's: vectors only where it is installed
        import numpy as np

        from memory.retrieval.embeddings.model import get_model

        nrng = np.random.default_rng(9)
        topics = get_model().embed(TOPICS).astype(np.float32)
    obs_w, file_w = (
        _Writer(Observation, connection),
        _Writer(ObservationFile, connection, with_id=False),
    )
    sum_w, emb_w = _Writer(Summary, connection), _Writer(Embedding, connection, with_id=False)
    pg = connection.vendor == "postgresql"
    use_pgvector = pg and with_vectors and pgvector.ready()
    types = list(VERBS)

    def batch(start: int, count: int) -> dict[str, list[tuple[Any, ...]]]:
        out: dict[str, list[tuple[Any, ...]]] = {"obs": [], "file": [], "summary": []}
        for n in range(start, start + count):
            si = n // PER_SESSION
            project = session_project(si, projects)
            if project == gate_project:
                path = f"src/f{rng.randrange(GATE_FILES)}.py"
            else:
                path = f"src/mod{rng.randrange(50):02d}/file{rng.randrange(40):02d}.py"
            created = now - span * (size - n)
            kind = rng.choice(types)
            obs = {
                "id": first_obs + n,
                "session": session_pks[si],
                "project": project,
                "type": kind,
                "title": f"{VERBS[kind]} {text(6)}",
                "subtitle": text(10),
                "facts": [f"{path}: {text(8)}", text(8)],
                "narrative": f"{text(30)} in {path}",
                "concepts": [rng.choice(CONCEPTS)],
                "files_read": [path],
                "files_modified": [],
                "tool_name": "Read",
                "compressor": "offline",
                "created": created,
            }
            out["obs"].append(obs_w.row(obs))
            file_row = {"observation": first_obs + n, "project": project, "path": path}
            out["file"].append(file_w.row({**file_row, "role": "read", "created": created}))
            if n % PER_SESSION == PER_SESSION - 1 or n == size - 1:
                summary = {
                    "id": first_summary + si,
                    "session": session_pks[si],
                    "project": project,
                    "request": f"Work on {text(6)}",
                    "investigated": text(10),
                    "learned": text(30),
                    "completed": text(10),
                    "next_steps": text(8),
                    "compressor": "offline",
                    "created": created,
                }
                out["summary"].append(sum_w.row(summary))
        return out

    def vector_rows(kind: str, ids: list[int]) -> tuple[list[tuple[Any, ...]], Any]:
        vectors = _unit_vectors(nrng, topics, len(ids))
        rows = [
            emb_w.row(
                {
                    "kind": kind,
                    "object_id": pk,
                    "model": version,
                    "vector": v.tobytes(),
                    "created": now,
                }
            )
            for pk, v in zip(ids, vectors, strict=True)
        ]
        return rows, vectors

    dropped: list[str] = []
    triggers: list[str] = []
    with connection.cursor() as cursor:
        if pg:
            dropped = _pg_drop_secondary_indexes(cursor)
        else:
            triggers = _sqlite_drop_fts_insert_triggers(cursor)
        try:
            for start in range(0, size, BATCH):
                count = min(BATCH, size - start)
                rows = batch(start, count)
                with transaction.atomic():  # one transaction per batch, as an import does
                    obs_w.write(cursor, rows["obs"])
                    file_w.write(cursor, rows["file"])
                    sum_w.write(cursor, rows["summary"])
                    if not with_vectors:
                        continue
                    summary_ids = [r[0] for r in rows["summary"]]
                    for kind, ids in (
                        ("observation", [first_obs + n for n in range(start, start + count)]),
                        ("summary", summary_ids),
                    ):
                        emb_rows, vectors = vector_rows(kind, ids)
                        emb_w.write(cursor, emb_rows)
                        if use_pgvector:
                            pgvector.write(kind, ids, vectors.astype("float32"))
            inserted = time.perf_counter() - started
        finally:
            if pg:
                _pg_restore(cursor, dropped)
            else:
                _sqlite_restore_fts(cursor, triggers)
    return {
        "seed_s": time.perf_counter() - started,
        "insert_s": inserted,
        "rows": size,
        "vectors": with_vectors,
        "pgvector": use_pgvector,
        "project": gate_project,
        # What a reused store is brought back to before each run (scale.child_reset).
        "max_session": max(session_pks),
        "max_observation": first_obs + size - 1,
        "max_summary": first_summary + n_sessions - 1,
    }


def _sqlite_drop_fts_insert_triggers(cursor: Any) -> list[str]:
    """Drop the FTS tables' AFTER INSERT triggers; returns their CREATE statements."""
    cursor.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE '%\\_fts\\_ai' ESCAPE '\\'"
    )
    found = cursor.fetchall()
    for name, _ in found:
        cursor.execute(f'DROP TRIGGER "{name}"')
    return [sql for _, sql in found]


def _sqlite_restore_fts(cursor: Any, triggers: list[str]) -> None:
    """FTS5 `rebuild` reads every row through the content view, then the triggers return."""
    cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%fts5%'")
    for (fts,) in cursor.fetchall():
        cursor.execute(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')")
    for sql in triggers:
        cursor.execute(sql)
    cursor.execute("ANALYZE")


def _pg_drop_secondary_indexes(cursor: Any) -> list[str]:
    """Drop the bulk tables' indexes that back no constraint; returns their definitions."""
    cursor.execute(
        "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) FROM pg_index i "
        "WHERE i.indrelid::regclass::text = ANY(%s) "
        "AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)",
        [list(PG_BULK_TABLES)],
    )
    found = cursor.fetchall()
    for name, _ in found:
        cursor.execute(f"DROP INDEX {name}")
    return [definition for _, definition in found]


def _pg_restore(cursor: Any, definitions: list[str]) -> None:
    cursor.execute("SET maintenance_work_mem = '2GB'")
    for definition in definitions:
        cursor.execute(definition)
    for table in ("memory_observation", "memory_summary", "memory_session"):
        cursor.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))"
        )
    cursor.execute("ANALYZE")
