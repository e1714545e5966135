"""`python -m tests.bench import_rate [--size N]`: how fast `cmem import` brings history in.

For each size (default 10,000; `--size N` for another), in a child with a throwaway data
dir (`rerun_in_fresh_data_dir`), the child migrates and then, per format:

1. generates N realistic observations (20 per session, 3 facts, 1-3 files, a summary and
   two prompts per session) as that format stores them:
   - `json`: a `cmem export` document;
   - `claude-mem`: a claude-mem SQLite database (the schema tests/importers/claude_mem_db.py
     builds, upstream's FTS triggers included);
   - `claude-code`: Claude Code transcripts (one .jsonl per session, a Read/Edit/Bash tool
     use with its result per observation); the importer stores tool-use Events that the
     compressor turns into observations later, so its rate counts tool uses;
2. runs `cmem import <format> …` (the management command, progress bar included) and prints
   observations/s, then the same import again (idempotence: it must add nothing) and its time.

Embedding is excluded: imported rows wait for the background sweep (`cmem status`).
There is no markdown importer in cmem (issue 33 names one); none is measured.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import sqlite3
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

from tests.bench.harness import is_bench_child, rerun_in_fresh_data_dir
from tests.importers.claude_mem_db import SCHEMA

PER_SESSION = 20
PROJECTS = ["shop-api", "blog", "infra", "mobile-app", "data-pipeline"]
_VOCABULARY = (
    "cache gate session token search index worker queue retry timeout checkout payment "
    "discount invoice schema migration trigger query planner vector embedding summary prompt "
    "observer handler request response header cookie login password hash rotate deploy "
    "container volume network proxy socket buffer stream parser lexer render template "
    "component state reducer effect hook router middleware logger metric trace span"
)
WORDS = _VOCABULARY.split()
TYPES = ["bugfix", "feature", "refactor", "change", "discovery", "decision"]
T0 = datetime(2026, 6, 1, tzinfo=UTC)


def _words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(low, high)))


def _file(rng: random.Random, project: str) -> str:
    return (
        f"/home/dev/{project}/src/{rng.choice(WORDS)}/{rng.choice(WORDS)}_{rng.randrange(200)}.py"
    )


def _observations(size: int, seed: int) -> list[dict[str, Any]]:
    """N observations grouped by session index: what every format is generated from."""
    rng = random.Random(seed)
    rows = []
    for i in range(size):
        s = i // PER_SESSION
        project = PROJECTS[s % len(PROJECTS)]
        files = [_file(rng, project) for _ in range(rng.randint(1, 3))]
        title = f"{_words(rng, 4, 9)} #{i}".capitalize()
        narrative = _words(rng, 40, 90)
        rows.append(
            {
                "session": s,
                "project": project,
                "type": rng.choice(TYPES),
                "title": title,
                "subtitle": _words(rng, 6, 12),
                "facts": [_words(rng, 6, 14) for _ in range(3)],
                "narrative": narrative,
                "concepts": rng.sample(["how-it-works", "gotcha", "trade-off", "pattern"], 2),
                "files_read": files[:-1] or files,
                "files_modified": files[-1:] if len(files) > 1 else [],
                "prompt_number": 1 + (i % PER_SESSION) // 10,
                "content_hash": hashlib.sha256(f"{s}\0{title}\0{narrative}".encode()).hexdigest()[
                    :16
                ],
                "created": T0 + timedelta(minutes=i),
            }
        )
    return rows


def _sessions(rows: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(row["session"], []).append(row)
    return out


def write_json(rows: list[dict[str, Any]], path: Path) -> None:
    sessions = []
    for s, obs in _sessions(rows).items():
        start = obs[0]["created"]
        sessions.append(
            {
                "platform": "claude-code",
                "session_id": f"json-{s}",
                "project": obs[0]["project"],
                "project_root": f"/home/dev/{obs[0]['project']}",
                "cwd": f"/home/dev/{obs[0]['project']}",
                "status": "completed",
                "prompt_counter": 2,
                "started": start.isoformat(),
                "ended": (start + timedelta(hours=1)).isoformat(),
                "prompts": [
                    {
                        "number": n,
                        "text": _words(random.Random(s + n), 8, 20),
                        "created": start.isoformat(),
                    }
                    for n in (1, 2)
                ],
                "observations": [
                    {
                        **{
                            k: v for k, v in o.items() if k not in {"session", "project", "created"}
                        },
                        "compressor": "offline",
                        "created": o["created"].isoformat(),
                    }
                    for o in obs
                ],
                "summaries": [
                    {
                        "request": f"work on {obs[0]['title']}",
                        "learned": obs[0]["narrative"][:200],
                        "completed": "done",
                        "created": (start + timedelta(minutes=59)).isoformat(),
                    }
                ],
            }
        )
    document = {"format": "cmem-export", "version": 1, "project": None, "sessions": sessions}
    path.write_text(json.dumps(document))


def write_claude_mem(rows: list[dict[str, Any]], path: Path) -> None:
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    ms = lambda at: int(at.timestamp() * 1000)  # noqa: E731
    for s, obs in _sessions(rows).items():
        start = obs[0]["created"]
        db.execute(
            "INSERT INTO sdk_sessions (id, content_session_id, memory_session_id, project, started_at, started_at_epoch,"
            " completed_at, completed_at_epoch, status, prompt_counter) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'completed', 2)",
            (s + 1, f"cm-{s}", f"mem-{s}", obs[0]["project"], start.isoformat(), ms(start),
             (start + timedelta(hours=1)).isoformat(), ms(start + timedelta(hours=1))),
        )  # fmt: skip
        db.executemany(
            "INSERT INTO user_prompts (session_db_id, content_session_id, prompt_number, prompt_text, created_at, created_at_epoch)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            [(s + 1, f"cm-{s}", n, _words(random.Random(s + n), 8, 20), start.isoformat(), ms(start)) for n in (1, 2)],
        )  # fmt: skip
        db.executemany(
            "INSERT INTO observations (memory_session_id, project, type, title, subtitle, facts, narrative, concepts, files_read,"
            " files_modified, prompt_number, discovery_tokens, content_hash, generated_by_model, created_at, created_at_epoch)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 800, ?, 'claude-haiku-4-5', ?, ?)",
            [(f"mem-{s}", o["project"], o["type"], o["title"], o["subtitle"], json.dumps(o["facts"]), o["narrative"],
              json.dumps(o["concepts"]), json.dumps(o["files_read"]), json.dumps(o["files_modified"]), o["prompt_number"],
              o["content_hash"], o["created"].isoformat(), ms(o["created"])) for o in obs],
        )  # fmt: skip
        db.execute(
            "INSERT INTO session_summaries (memory_session_id, project, request, learned, completed, created_at, created_at_epoch)"
            " VALUES (?, ?, ?, ?, 'done', ?, ?)",
            (f"mem-{s}", obs[0]["project"], f"work on {obs[0]['title']}", obs[0]["narrative"][:200],
             start.isoformat(), ms(start + timedelta(minutes=59))),
        )  # fmt: skip
    db.commit()
    db.close()


def write_transcripts(rows: list[dict[str, Any]], folder: Path) -> None:
    """One Claude Code transcript per session: two prompts, and per observation an assistant
    tool_use and the user's tool_result (with toolUseResult), as Claude Code writes them."""
    for s, obs in _sessions(rows).items():
        sid = str(uuid.UUID(int=s + 1))
        cwd = f"/home/dev/{obs[0]['project']}"
        lines: list[dict[str, Any]] = []
        base = {"sessionId": sid, "cwd": cwd, "isSidechain": False}
        for i, o in enumerate(obs):
            at = o["created"].isoformat().replace("+00:00", "Z")
            if i % 10 == 0:
                text = _words(random.Random(s + i), 8, 20)
                lines.append({**base, "type": "user", "timestamp": at,
                              "message": {"role": "user", "content": text}})  # fmt: skip
            tool_id = f"toolu_{s}_{i}"
            path = (o["files_modified"] or o["files_read"])[0]
            name, tool_input, result = (
                ("Read", {"file_path": path}, {"type": "text", "file": {"filePath": path, "content": o["narrative"]}})
                if i % 3 == 0
                else ("Edit", {"file_path": path, "old_string": o["subtitle"], "new_string": o["title"]},
                      {"filePath": path, "oldString": o["subtitle"], "newString": o["title"]})
                if i % 3 == 1
                else ("Bash", {"command": f"pytest -q {path}"}, {"stdout": o["narrative"], "stderr": "", "interrupted": False})
            )  # fmt: skip
            lines.append({**base, "type": "assistant", "timestamp": at, "message": {
                "role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}]}})  # fmt: skip
            lines.append({**base, "type": "user", "timestamp": at, "toolUseResult": result, "message": {
                "role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": o["narrative"]}]}})  # fmt: skip
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{sid}.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")


def _import(args: list[str]) -> tuple[float, str]:
    # Django is set up only in the child (harness.django_setup): imported here, not at the top.
    from django.core.management import call_command

    out = StringIO()
    start = time.perf_counter()
    call_command("import", *args, stdout=out)
    return time.perf_counter() - start, out.getvalue()


def _counts() -> dict[str, int]:
    # Models load once the child has set Django up.
    from memory.models import Event, Observation, Prompt, Session

    return {
        "sessions": Session.objects.count(),
        "prompts": Prompt.objects.count(),
        "observations": Observation.objects.count(),
        "events": Event.objects.count(),
    }


def child_run(out: Any, size: int) -> None:
    # Django is set up only in the child (harness.django_setup): imported here, not at the top.
    from django.core.management import call_command

    call_command("migrate", "--noinput", verbosity=0)
    work = Path(tempfile.mkdtemp(prefix="cmem-bench-import-"))
    formats: list[tuple[str, Any, list[str], str]] = [
        ("json", write_json, ["json", str(work / "export.json")], "observations"),
        ("claude-mem", write_claude_mem, ["claude-mem", str(work / "claude-mem.db")], "observations"),
        ("claude-code", write_transcripts, ["claude-code", str(work / "transcripts")], "events"),
    ]  # fmt: skip
    try:
        for seed, (name, write, args, counted) in enumerate(formats):
            rows = _observations(size, seed)
            write(rows, Path(args[1]))
            before = _counts()
            took, _ = _import(args)
            after = _counts()
            added = after[counted] - before[counted]
            again, _ = _import(args)
            readded = {k: v - after[k] for k, v in _counts().items() if v != after[k]}
            out.write(
                f"{name:<12} {size:>7} {'tool uses' if counted == 'events' else 'observations'}: "
                f"{took:7.1f} s  {added / took:8.0f}/s  (added {added}; re-import {again:.1f} s, "
                f"added {readded or 'nothing'})"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(*, out: Any, options: dict[str, Any]) -> None:
    size = int(options.get("size") or 10_000)
    if not is_bench_child("import_rate"):
        rerun_in_fresh_data_dir("import_rate", options, 1)
        return
    child_run(out, size)
