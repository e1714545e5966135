"""`python -m tests.bench public_recall`: recall on everyday conversation, not coding prose.

The set ships here (`data/public_recall.json.gz`, made by `public_recall_make.py` from
emorynlp/FriendsQA, Apache-2.0; data/public_recall.NOTICE.md): 5,183 utterances of 249
scenes of the TV show Friends (FriendsQA's dev and test splits), and the 2,383 questions
FriendsQA asks about them, each labelled with the utterances its answer spans lie in.

One unit = one utterance: an observation whose title is the speaker and whose narrative is
what they said, loaded the way a user brings history in (`cmem import json`'s
`memory_import`: a session a scene, a project an episode), then embedded through the
consumer's own code (`embed_pending`). All 249 scenes share one store, so every question
searches 5,183 utterances of the same six friends: a haystack.

The halves are fixed by a hash of the scene (`half_of`): whole scenes go to one half, never
drawn at random. `--half tuning` (tune there) or `--half heldout` (the default, the one
reported). Groups: FriendsQA's own question types (what, who, when,
where, why, how) and whether FriendsQA marks the question as a paraphrase; a group is
reported when it holds at least MIN_GROUP queries.

Measured: R@1, R@5, R@10 (relevant found in the top k over min(relevant, k)) and MRR for
`keyword`, `semantic` and `hybrid` through the search service `/api/search` calls (no
filters, top 10, observations), as `bench recall` does, and for a baseline with no cmem at
all: a plain SQLite FTS5 table of the same text, the question's words OR-ed, ranked by bm25.

Iterating fast (the load and embedding take about a minute; a half's queries seconds):
    python -m tests.bench public_recall --half tuning --keep /tmp/pr   # load once, keep it
    python -m tests.bench public_recall --half tuning --reuse /tmp/pr  # reuse the store
or, in Python, against that data dir (CLAUDE_MEM_DATA_DIR=/tmp/pr, Django set up):
    data = load_set(); ids = store_ids(data); queries = split(data["queries"], "tuning")
    ranked = ranked_keys(queries, "hybrid", ids)   # {question id: [unit keys, best first]}
    evaluate(queries, ranked)["all"]["R@5"]
after changing e.g. memory.retrieval.search.hybrid's module constants in that process.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import sqlite3
import time
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from memory.retrieval import embeddings
from memory.retrieval.search.query import Mode
from tests.bench.harness import is_bench_child, rerun_in_fresh_data_dir

if not embeddings.available():
    # `cmem bench` reports a benchmark whose module cannot import as not available.
    raise ModuleNotFoundError(embeddings.unavailable_note())

NAME = "public_recall"
DATA = Path(__file__).parent / "data" / "public_recall.json.gz"
Half = Literal["tuning", "heldout"]
HALVES: tuple[Half, ...] = ("tuning", "heldout")
MODES: tuple[Mode, ...] = ("keyword", "semantic", "hybrid")
BASELINE = "fts5 bm25"
GROUPS = ("what", "who", "when", "where", "why", "how", "original", "paraphrased")
MIN_GROUP = 50
KS = (1, 5, 10)
METRICS = (*(f"R@{k}" for k in KS), "MRR")
# Salted so the split is this benchmark's own, not some other use of the same ids.
_SALT = b"cmem public_recall v1:"
_WORD = re.compile(r"\w+", re.UNICODE)


def load_set() -> dict[str, Any]:
    with gzip.open(DATA, "rt", encoding="utf-8") as f:
        return json.load(f)


def half_of(conversation: str) -> Half:
    """The half a scene's questions belong to: fixed by a hash of its id."""
    digest = hashlib.sha256(_SALT + conversation.encode()).digest()
    return HALVES[digest[0] % 2]


def split(queries: list[dict[str, Any]], half: Half) -> list[dict[str, Any]]:
    return [q for q in queries if half_of(q["conversation"]) == half]


def project_of(conversation: str) -> str:
    """An episode's project name: `s01_e23_c06` -> `friends-s01e23`."""
    season, episode = conversation.split("_")[:2]
    return f"friends-{season}{episode}"


def unit_hash(key: str) -> str:
    """The content hash a unit is imported with: the import's dedup key, and how
    `store_ids` finds the unit's row again."""
    return hashlib.sha256(b"public_recall unit " + key.encode()).hexdigest()


# -- loading -----------------------------------------------------------------------------


def export_document(units: Iterable[dict[str, str]]) -> dict[str, Any]:
    """The units as a `cmem export` document: a session a scene (utterances a minute apart,
    in order), in a project an episode."""
    start = datetime(2025, 1, 1, tzinfo=UTC)
    sessions: dict[str, dict[str, Any]] = {}
    for i, unit in enumerate(units):
        conversation = unit["conversation"]
        at = (start + timedelta(minutes=i)).isoformat()
        session = sessions.setdefault(
            conversation,
            {
                "platform": "claude-code",
                "session_id": f"friendsqa-{conversation}",
                "project": project_of(conversation),
                "started": at,
                "status": "completed",
                "observations": [],
            },
        )
        session["observations"].append(
            {
                "type": "note",
                "title": unit["speaker"],
                "narrative": unit["text"],
                "content_hash": unit_hash(unit["key"]),
                "created": at,
            }
        )
    return {"format": "cmem-export", "version": 1, "sessions": list(sessions.values())}


def load_store(data: dict[str, Any]) -> dict[str, float]:
    """Import the units into this process's (migrated) database and embed them; returns
    the seconds each step took."""
    # Models and services: only once Django is set up in the bench's child (or the test).
    from memory.importers.json_io import memory_import
    from memory.importers.report import ImportReport
    from memory.retrieval.embeddings.store import embed_pending

    began = time.perf_counter()
    report = memory_import(document=export_document(data["units"]), report=ImportReport())
    if report.problems:
        raise RuntimeError(f"import failed: {report.problems[:3]}")
    imported = time.perf_counter()
    embed_pending(("observation",))
    return {"import": imported - began, "embed": time.perf_counter() - imported}


def store_ids(data: dict[str, Any]) -> dict[str, int]:
    """Each unit's row id in this process's database ({} when the set is not loaded)."""
    # Models and services: only once Django is set up in the bench's child (or the test).
    from memory.models import Observation

    by_hash = dict(
        Observation.objects.filter(project__startswith="friends-").values_list("content_hash", "pk")
    )
    ids = {u["key"]: by_hash.get(unit_hash(u["key"])) for u in data["units"]}
    return {k: v for k, v in ids.items() if v is not None}


# -- ranking -----------------------------------------------------------------------------


def ranked_keys(
    queries: list[dict[str, Any]],
    mode: Mode,
    ids: dict[str, int],
    *,
    limit: int = 10,
    by_episode: bool = False,
) -> dict[str, list[str]]:
    """Each query's top `limit` units through cmem's search in `mode` (the service
    `/api/search` calls; no filters, or the query's episode when `by_episode`)."""
    # Models and services: only once Django is set up in the bench's child (or the test).
    from memory.retrieval.search.query import SearchQuery
    from memory.retrieval.search.service import search

    key_of = {pk: key for key, pk in ids.items()}
    out: dict[str, list[str]] = {}
    for q in queries:
        hits = search(
            SearchQuery(
                text=q["text"],
                mode=mode,
                kinds=("observation",),
                limit=limit,
                project=project_of(q["conversation"]) if by_episode else None,
            )
        )
        out[q["id"]] = [key_of[h.id] for h in hits if h.id in key_of]
    return out


def fts5_index(units: Iterable[dict[str, str]]) -> sqlite3.Connection:
    """A plain in-memory SQLite FTS5 table of the same text (speaker, then what was said),
    with no cmem in the way: the baseline."""
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE u USING fts5(key UNINDEXED, body, tokenize='porter unicode61')"
    )
    db.executemany(
        "INSERT INTO u (key, body) VALUES (?, ?)",
        ((u["key"], f"{u['speaker']}\n{u['text']}") for u in units),
    )
    return db


def fts5_ranked(
    db: sqlite3.Connection, queries: list[dict[str, Any]], *, limit: int = 10
) -> dict[str, list[str]]:
    """Each query's words, quoted and OR-ed, ranked by FTS5's bm25."""
    out: dict[str, list[str]] = {}
    for q in queries:
        words = sorted(set(_WORD.findall(q["text"].lower())))
        if not words:
            out[q["id"]] = []
            continue
        match = " OR ".join(f'"{w}"' for w in words)
        rows = db.execute(
            "SELECT key FROM u WHERE u MATCH ? ORDER BY bm25(u) LIMIT ?", (match, limit)
        ).fetchall()
        out[q["id"]] = [row[0] for row in rows]
    return out


# -- scoring -----------------------------------------------------------------------------


def score(ranked: list[str], relevant: set[str]) -> dict[str, float]:
    """R@k (relevant in the top k over min(|relevant|, k)) and the reciprocal rank."""
    out = {f"R@{k}": len(set(ranked[:k]) & relevant) / min(len(relevant), k) for k in KS}
    out["MRR"] = next((1.0 / (i + 1) for i, key in enumerate(ranked) if key in relevant), 0.0)
    return out


def groups_of(query: dict[str, Any]) -> tuple[str, ...]:
    return (query["group"], "paraphrased" if query["paraphrased"] else "original", "all")


def evaluate(
    queries: list[dict[str, Any]], ranked: dict[str, list[str]]
) -> dict[str, dict[str, float]]:
    """Mean of each metric per group (and `all`), with `n` the group's query count."""
    sums: dict[str, dict[str, float]] = {}
    for q in queries:
        result = score(ranked.get(q["id"], []), set(q["relevant"]))
        for group in groups_of(q):
            bucket = sums.setdefault(group, {"n": 0.0, **dict.fromkeys(METRICS, 0.0)})
            bucket["n"] += 1
            for metric, value in result.items():
                bucket[metric] += value
    return {g: {m: (v if m == "n" else v / b["n"]) for m, v in b.items()} for g, b in sums.items()}


def table_lines(tables: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    """A markdown table: a row per (mode, group of at least MIN_GROUP queries)."""
    lines = [
        "| mode | group | queries | " + " | ".join(METRICS) + " |",
        "|---|---|---:|" + "---:|" * len(METRICS),
    ]
    for mode, table in tables.items():
        for group in (*GROUPS, "all"):
            row = table.get(group)
            if row and (row["n"] >= MIN_GROUP or group == "all"):
                cells = " | ".join(f"{row[m]:.3f}" for m in METRICS)
                lines.append(f"| {mode} | {group} | {int(row['n'])} | {cells} |")
    return lines


def measure(data: dict[str, Any], half: Half) -> dict[str, dict[str, dict[str, float]]]:
    """Every mode and the baseline over one half's queries, on the loaded store."""
    queries = split(data["queries"], half)
    ids = store_ids(data)
    tables = {BASELINE: evaluate(queries, fts5_ranked(fts5_index(data["units"]), queries))}
    for mode in MODES:
        tables[mode] = evaluate(queries, ranked_keys(queries, mode, ids))
    return tables


# -- the benchmark -----------------------------------------------------------------------


def _child(half: Half, out: Any) -> None:
    # Models and services: only once Django is set up in the bench's child (or the test).
    from django.core.management import call_command

    from memory.retrieval.embeddings.model import get_model

    data = load_set()
    call_command("migrate", verbosity=0)
    ids = store_ids(data)
    if ids and len(ids) != len(data["units"]):
        raise RuntimeError(f"the data dir holds {len(ids)} of {len(data['units'])} units")
    if ids:
        out.write(f"reusing the store in {os.environ['CLAUDE_MEM_DATA_DIR']}")
    else:
        took = load_store(data)
        out.write(
            f"loaded {len(data['units']):,} units through `cmem import json` in "
            f"{took['import']:.1f} s, embedded in {took['embed']:.1f} s"
        )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    queries = split(data["queries"], half)
    out.write(
        f"half: {half} ({len(queries)} of {len(data['queries'])} queries, "
        f"{len({q['conversation'] for q in queries})} scenes); model {get_model().version}; "
        f"load average {load:.1f} on {os.cpu_count()} CPUs"
    )
    began = time.perf_counter()
    tables = measure(data, half)
    out.write(f"searched in {time.perf_counter() - began:.1f} s")
    out.write("")
    for line in table_lines(tables):
        out.write(line)
    r5 = {mode: tables[mode]["all"]["R@5"] for mode in MODES}
    out.write("")
    out.write(
        f"R@5: hybrid − keyword {r5['hybrid'] - r5['keyword']:+.3f} (target ≥ +0.05); "
        f"semantic − keyword {r5['semantic'] - r5['keyword']:+.3f} (target ≥ −0.05)"
    )


def run(*, out: Any, options: dict[str, Any]) -> None:
    half: Half = options.get("half") or "heldout"
    if is_bench_child(NAME):
        _child(half, out)
        return
    keep, reuse = (
        str(Path(p).resolve()) if p else None for p in (options.get("keep"), options.get("reuse"))
    )
    if reuse and not Path(reuse, "cmem.sqlite3").is_file():
        raise SystemExit(f"--reuse {reuse}: no store there (make one with --keep {reuse})")
    if keep and Path(keep).exists() and any(Path(keep).iterdir()):
        raise SystemExit(f"--keep {keep}: not empty (to use the store in it: --reuse {keep})")
    folder = reuse or keep
    if folder:
        Path(folder).mkdir(mode=0o700, parents=True, exist_ok=True)
    out.write(f"half: {half}" + (" (the one reported)" if half == "heldout" else " (tune here)"))
    rerun_in_fresh_data_dir(NAME, options, 1, keep=folder, args=("--half", half))
