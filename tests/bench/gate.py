"""`python -m tests.bench gate`: the file-read gate and the SessionStart index at size.

For each size (default 100,000 and 10,000 observations; `--size N` for one size,
`--quick` for 10,000 only; `--hot H` makes H of them touch one file, src/pkg0/mod0.py,
and measures reads of that file only: a gate that must not grow with a file's history),
in a temporary data dir of its own:

1. `cmem migrate`; write 5,000 real files (2-6 KB) into a scratch project folder.
2. Seed N observations over those files with bulk_create (1-4 files each, read or
   modified, the file's real sha256 on every ObservationFile row, 20 per session, one
   summary per session), in a child process on that database.
3. Measure in a child process:
   - `file-context`: POST /api/hooks/claude-code/file-context through Django's test
     Client: a session's first Read of a file with history (the full path: stat,
     exclusion, view and by-file lookups, hash, rank, render, FileView + ledger writes in
     one transaction) - p50 and p99;
   - the by-file lookup alone, the gate's bounded slice (what claude-mem's 13 ms full scan
     does) - p50;
   - the SessionStart index: cold render (cache invalidated) p50, and a cached start p50;
   - `context` endpoint, cold, through the test Client - p50.

The figures to beat (claude-mem 13.25 on this kind of machine, 10k observations): by-file
query 13 ms, context render 52 ms. Targets: gate p50 <= 5 ms and context <= 30 ms at 100k.

`python -m tests.bench.gate hooks N PROJECT_DIR` on a data dir seeded as above times
the service alone, as the worker's raw lane calls it (child_hooks: hook_handle for a gate
decision and a tool use's ingest, and a cold context render, interleaved).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from tests.bench.harness import (
    child_env,
    child_json,
    child_main,
    django_setup,
    migrated_and_seeded,
    percentile,
    scratch_dir,
    write_modules,
)

FILES = 5_000
PER_SESSION = 20
# The hot file of `--hot` (the child reads the count from the environment).
HOT_FILE = 0
HOT_ENV = "CMEM_BENCH_GATE_HOT"


def _rel(i: int) -> str:
    return f"src/pkg{i // 100}/mod{i}.py"


def child_seed(size: int, project_dir: str) -> dict[str, Any]:
    django_setup()
    from django.db import connection, transaction
    from django.utils import timezone

    from memory.models import Observation, ObservationFile, Session, Summary
    from memory.projects import project_for_cwd

    rng = random.Random(5)
    project = project_for_cwd(project_dir)
    hashes = [
        hashlib.sha256((Path(project_dir) / _rel(i)).read_bytes()).hexdigest() for i in range(FILES)
    ]
    words = [
        "cache",
        "gate",
        "session",
        "token",
        "search",
        "index",
        "worker",
        "queue",
        "hook",
        "summary",
        "parser",
        "config",
        "schema",
        "router",
        "retry",
        "lock",
        "ledger",
    ]
    now = timezone.now()
    hot = int(os.environ.get(HOT_ENV) or 0)
    started = time.perf_counter()
    n_sessions = max(1, size // PER_SESSION)
    with transaction.atomic():
        sessions = Session.objects.bulk_create(
            [
                Session(
                    session_id=f"bench-{i}",
                    project=project.name,
                    project_root=project.root,
                    cwd=project_dir,
                )
                for i in range(n_sessions)
            ],
            batch_size=2000,
        )
        observations: list[Observation] = []
        touched: list[list[tuple[int, str]]] = []
        for i in range(size):
            files = [
                (rng.randrange(FILES), rng.choice(["read", "read", "modified"]))
                for _ in range(rng.choice([1, 1, 2, 3, 4]))
            ]
            if hot and rng.random() < hot / size:  # this one touches the hot file too
                files[0] = (HOT_FILE, rng.choice(["read", "read", "read", "modified"]))
                files = list(dict(files).items())  # one row per file and role
            touched.append(files)
            title = " ".join(rng.choices(words, k=6))
            observations.append(
                Observation(
                    session=sessions[i // PER_SESSION],
                    project=project.name,
                    type=rng.choice(["discovery", "change", "bugfix", "feature", "decision"]),
                    title=title.capitalize(),
                    narrative=" ".join(rng.choices(words, k=40)),
                    facts=[" ".join(rng.choices(words, k=8))],
                    files_read=[_rel(f) for f, role in files if role == "read"],
                    files_modified=[_rel(f) for f, role in files if role == "modified"],
                    created=now - timedelta(seconds=(size - i) * 60),
                )
            )
        Observation.objects.bulk_create(observations, batch_size=2000)
        ObservationFile.objects.bulk_create(
            [
                ObservationFile(
                    observation=obs,
                    project=project.name,
                    path=_rel(f),
                    role=role,
                    content_hash=hashes[f],
                    created=obs.created,
                )
                for obs, files in zip(observations, touched, strict=True)
                for f, role in files
            ],
            batch_size=5000,
        )
        Summary.objects.bulk_create(
            [
                Summary(
                    session=s,
                    project=project.name,
                    request=f"Request {i}",
                    learned="Something learned",
                    completed="Done",
                    created=now - timedelta(seconds=(n_sessions - i) * 60 * PER_SESSION),
                )
                for i, s in enumerate(sessions)
            ],
            batch_size=2000,
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {"seed_s": time.perf_counter() - started, "size": size, "project": project.name}


def child_measure(runs: int, project_dir: str) -> dict[str, Any]:
    django_setup()
    from django.test import Client

    from memory.briefing.context import context_text
    from memory.briefing.gate import file_candidates
    from memory.models import ContextCache, ObservationFile, Session
    from memory.projects import project_for_cwd
    from memory.runtime.credentials import OWNER_SOCKET_ENVIRON

    project = project_for_cwd(project_dir)
    # In-process calls are the owner's, as on the worker's Unix socket.
    client = Client(SERVER_NAME="127.0.0.1", **{OWNER_SOCKET_ENVIRON: True})  # type: ignore[arg-type]  # WSGI environ extras are untyped
    rng = random.Random(11)

    # Files with history (all of them, at the default sizes): the gate's expensive path.
    known = sorted(
        set(ObservationFile.objects.filter(project=project.name).values_list("path", flat=True))
    )
    if os.environ.get(HOT_ENV):
        known = [_rel(HOT_FILE)]  # every decision reads the file with the huge history
    # Sessions exist before their first Read (UserPromptSubmit's session-init made them);
    # each decision is a session's first Read of a file with history.
    session_ids = [f"gate-{uuid.uuid4().hex}" for _ in range(runs + 20)]
    Session.objects.bulk_create(
        [
            Session(
                session_id=sid, project=project.name, project_root=project.root, cwd=project_dir
            )
            for sid in session_ids
        ]
    )

    def gate_once() -> tuple[float, float, str]:
        body = {
            "session_id": session_ids.pop(),
            "cwd": project_dir,
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": f"{project_dir}/{rng.choice(known)}"},
            "tool_use_id": "toolu_bench",
        }
        c0, t0 = time.thread_time(), time.perf_counter()
        resp = client.post(
            "/api/hooks/claude-code/file-context",
            data=json.dumps(body),
            content_type="application/json",
        )
        elapsed, cpu = time.perf_counter() - t0, time.thread_time() - c0
        out = resp.json()
        return elapsed, cpu, out.get("hookSpecificOutput", {}).get("permissionDecision", "pass")

    for _ in range(20):  # warm connections and caches, as a running worker would be
        gate_once()
    gate: list[float] = []
    gate_cpu: list[float] = []
    decisions: dict[str, int] = {}
    for _ in range(runs):
        elapsed, cpu, decision = gate_once()
        gate.append(elapsed)
        gate_cpu.append(cpu)
        decisions[decision] = decisions.get(decision, 0) + 1
    lookup: list[float] = []
    for _ in range(runs):
        rel = rng.choice(known)
        t0 = time.perf_counter()
        file_candidates(project=project.name, rel_path=rel, bounded=True)  # the gate's slice
        lookup.append(time.perf_counter() - t0)
    cold: list[float] = []
    cold_cpu: list[float] = []
    warm: list[float] = []
    chars = 0
    for _ in range(max(10, runs // 10)):
        ContextCache.invalidate(project=project.name)
        c0, t0 = time.thread_time(), time.perf_counter()
        text = context_text(project=project.name, root=project.root)
        cold.append(time.perf_counter() - t0)
        cold_cpu.append(time.thread_time() - c0)
        t0 = time.perf_counter()
        context_text(project=project.name, root=project.root)
        warm.append(time.perf_counter() - t0)
        chars = len(text)
    endpoint: list[float] = []
    for _ in range(max(10, runs // 10)):
        ContextCache.invalidate(project=project.name)
        body = {
            "session_id": f"ctx-{uuid.uuid4().hex}",
            "cwd": project_dir,
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
        t0 = time.perf_counter()
        client.post(
            "/api/hooks/claude-code/context", data=json.dumps(body), content_type="application/json"
        )
        endpoint.append(time.perf_counter() - t0)
    return {
        "gate_p50_ms": percentile(gate, 0.5) * 1000,
        "gate_p99_ms": percentile(gate, 0.99) * 1000,
        "gate_cpu_p50_ms": percentile(gate_cpu, 0.5) * 1000,
        "gate_decisions": decisions,
        "by_file_p50_ms": percentile(lookup, 0.5) * 1000,
        "context_cold_p50_ms": percentile(cold, 0.5) * 1000,
        "context_cold_cpu_p50_ms": percentile(cold_cpu, 0.5) * 1000,
        "load_average": os.getloadavg()[0],
        "context_cached_p50_ms": percentile(warm, 0.5) * 1000,
        "context_endpoint_cold_p50_ms": percentile(endpoint, 0.5) * 1000,
        "context_chars": chars,
    }


def child_profile(runs: int, project_dir: str, event: str = "file-context") -> dict[str, Any]:
    """One hook as `python -m tests.bench lean` sends it, through Django's test Client in this process:
    the request's CPU and wall time (medians), and a cProfile of as many requests by
    cumulative time. `file-context`: the whole gate decision (a new session's first Read
    of a file with history, no session row yet); `observation`: ingest of one tool use
    (the lean bench's Bash PostToolUse, one session)."""
    import cProfile
    import io
    import pstats

    django_setup()
    from django.test import Client

    from memory.management.commands.bench import _observation
    from memory.runtime.credentials import OWNER_SOCKET_ENVIRON

    client = Client(SERVER_NAME="127.0.0.1", **{OWNER_SOCKET_ENVIRON: True})  # type: ignore[arg-type]  # WSGI environ extras are untyped
    rng = random.Random(11)
    sent = [0]

    def body() -> bytes:
        sent[0] += 1
        if event == "observation":
            return _observation(sent[0])
        return _first_read(project_dir, rng)

    def once() -> tuple[float, float]:
        data = body()
        c0, w0 = time.thread_time(), time.perf_counter()
        client.post(f"/api/hooks/claude-code/{event}", data=data, content_type="application/json")
        return time.thread_time() - c0, time.perf_counter() - w0

    for _ in range(20):
        once()
    timed = [once() for _ in range(runs)]
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(runs):
        once()
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(r"memory/", 25)
    return {
        "event": event,
        "cpu_p50_ms": percentile([cpu for cpu, _ in timed], 0.5) * 1000,
        "wall_p50_ms": percentile([wall for _, wall in timed], 0.5) * 1000,
        "load_average": os.getloadavg()[0],
        "profile": text.getvalue(),
    }


def _first_read(project_dir: str, rng: random.Random) -> bytes:
    """A PreToolUse Read of a random seeded file, as a new session's first tool use."""
    return json.dumps(
        {
            "session_id": f"gate-{uuid.uuid4().hex}",
            "cwd": project_dir,
            "hook_event_name": "PreToolUse",
            "tool_name": "Read",
            "tool_input": {"file_path": f"{project_dir}/{_rel(rng.randrange(FILES))}"},
            "tool_use_id": "toolu_bench",
        }
    ).encode()


def child_hooks(runs: int, project_dir: str) -> dict[str, Any]:
    """The service alone, as the worker's raw WSGI lane calls it: memory.hooks.hook_handle
    for `file-context` (a new session's first Read of a file with history) and `observation`
    (the lean bench's Bash PostToolUse), and a cold context_text, interleaved one of each
    per round so the machine's moments hit all three alike. p50 wall and CPU, in ms."""
    django_setup()
    from memory.briefing.context import context_text
    from memory.hooks.dispatch import hook_handle
    from memory.management.commands.bench import _observation
    from memory.models import ContextCache
    from memory.projects import project_for_cwd

    project = project_for_cwd(project_dir)
    rng = random.Random(11)
    sent = [0]

    def file_context() -> None:
        hook_handle(
            platform="claude-code", event="file-context", body=_first_read(project_dir, rng)
        )

    def observation() -> None:
        sent[0] += 1
        hook_handle(platform="claude-code", event="observation", body=_observation(sent[0]))

    def context_cold() -> None:
        context_text(project=project.name, root=project.root)

    steps = {"file_context": file_context, "observation": observation, "context_cold": context_cold}
    wall: dict[str, list[float]] = {name: [] for name in steps}
    cpu: dict[str, list[float]] = {name: [] for name in steps}
    for round_ in range(20 + runs):  # 20 rounds warm connections and caches first
        for name, step in steps.items():
            if name == "context_cold":
                ContextCache.invalidate(project=project.name)  # outside the timing
            c0, w0 = time.thread_time(), time.perf_counter()
            step()
            if round_ >= 20:
                wall[name].append(time.perf_counter() - w0)
                cpu[name].append(time.thread_time() - c0)
    out: dict[str, Any] = {}
    for name in steps:
        out[f"{name}_p50_ms"] = percentile(wall[name], 0.5) * 1000
        out[f"{name}_cpu_p50_ms"] = percentile(cpu[name], 0.5) * 1000
    out["load_average"] = os.getloadavg()[0]
    return out


# --- parent side ---------------------------------------------------------------------------


def _bench_size(size: int, runs: int, out: Any, hot: int = 0) -> dict[str, Any]:
    with scratch_dir("cmem-bench-gate-") as work:
        project = work / "bench-project"
        write_modules(project, FILES, _rel)
        env = child_env(
            work / "data",
            CLAUDE_MEM_COMPRESSOR="offline",
            DJANGO_SETTINGS_MODULE="cmem_site.settings",
            **({HOT_ENV: str(hot)} if hot else {}),
        )
        what = f" ({hot:,} of them on {_rel(HOT_FILE)})" if hot else ""
        out.write(f"{size:,} observations over {FILES:,} files{what}: seeding…")
        seeded = migrated_and_seeded("tests.bench.gate", env, size, project)
        out.write(f"  seeded in {seeded['seed_s']:.1f}s; measuring {runs} gate decisions…")
        return {
            **seeded,
            "hot": hot,
            **child_json("tests.bench.gate", env, "measure", str(runs), str(project)),
        }


def run(*, out: Any, options: dict[str, Any]) -> None:
    runs = options.get("runs") or 300
    if options.get("size"):
        sizes = [int(options["size"])]
    elif options.get("quick"):
        sizes = [10_000]
    else:
        sizes = [100_000, 10_000]
    hot = int(options.get("hot") or 0)
    results = [_bench_size(size, runs, out, hot) for size in sizes]
    out.write(
        "| observations | gate p50 (CPU) | gate p99 | by-file query p50 | context cold p50 (CPU) "
        "| context cached p50 | context hook cold p50 | load avg |"
    )
    out.write("|---|---|---|---|---|---|---|---|")
    for r in results:
        hot_rows = f" ({r['hot']:,} on one file)" if r.get("hot") else ""
        out.write(
            f"| {r['size']:,}{hot_rows} | {r['gate_p50_ms']:.2f} ms ({r['gate_cpu_p50_ms']:.2f}) "
            f"| {r['gate_p99_ms']:.2f} ms | {r['by_file_p50_ms']:.2f} ms "
            f"| {r['context_cold_p50_ms']:.1f} ms ({r['context_cold_cpu_p50_ms']:.1f}) "
            f"| {r['context_cached_p50_ms']:.2f} ms | {r['context_endpoint_cold_p50_ms']:.1f} ms "
            f"| {r['load_average']:.1f} |"
        )
    out.write(
        "wall-clock medians; (CPU) = the request's own CPU time, what an idle core would take"
    )
    ten_k = next((r for r in results if r["size"] == 10_000), None)
    if ten_k:
        by_file, gate, ctx = (
            ten_k["by_file_p50_ms"],
            ten_k["gate_p50_ms"],
            ten_k["context_cold_p50_ms"],
        )
        out.write(
            f"vs claude-mem 13.25 at 10k: by-file query {13.0 / max(by_file, 1e-6):.0f}x faster "
            f"({by_file:.2f} vs 13 ms; the whole gate decision with its writes {13.0 / max(gate, 1e-6):.1f}x); "
            f"context render {52.0 / max(ctx, 1e-6):.1f}x faster ({ctx:.1f} vs 52 ms)"
        )
    out.write(json.dumps(results, default=str))


if __name__ == "__main__":
    # `python -m tests.bench.gate profile N PROJECT_DIR [observation]` on a seeded data
    # dir (docs/benchmarks/lean.md): the decision's (or a tool use's ingest) CPU, wall time
    # and profile, printed as text.
    if sys.argv[1:2] == ["profile"]:
        found = child_profile(int(sys.argv[2]), sys.argv[3], *sys.argv[4:5])
        print(found.pop("profile"))
        print(json.dumps(found))
    elif sys.argv[1:2] == ["hooks"]:
        # `python -m tests.bench.gate hooks N PROJECT_DIR`: hook_handle in-process.
        print(json.dumps(child_hooks(int(sys.argv[2]), sys.argv[3])))
    else:
        child_main(seed=child_seed, measure=child_measure)
