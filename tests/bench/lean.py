"""`python -m tests.bench lean`: every row of issue 19's table in one run, beside claude-mem's figure.

One temporary data dir with 10,000 observations (the gate bench's seed: 5,000 real files,
20 observations a session, a summary each, real content hashes), embedded beforehand
(`cmem embeddings backfill`), as a worker that has been in use holds them. Then:

1. `cmem serve` twice; the second start (schema unchanged) is "cold start to first healthy
   answer": spawn to the first 200 from /api/health, with the state files' times to say
   where it went (supervisor up, serving process spawned, sockets bound).
2. Idle memory of the whole tree (RSS and PSS from /proc/<pid>/smaps_rollup).
3. Over HTTP on 127.0.0.1 (keep-alive unless said): /api/health; an authenticated call
   (Bearer secret, GET /api/observations?ids=…); keyword search, observations only and
   mixed; ingest of one PostToolUse; the by-file query on a fresh connection; the whole
   gate decision (POST file-context, a session's first Read of a file with history).
4. The SessionStart index render at 10k with its cache invalidated (in-process, the gate
   bench's child), since over HTTP the cache would answer.
5. Memory again after a hybrid search has loaded the embedding model.
6. Hooks: fork/exec/wait of the hook command against the venv's bare `python -c pass`,
   same stdin, interleaved A B A B; the `-I -S` entry (what install writes) for each of
   file-context, observation, context, session-init and summarize, and `cmem hook`;
   then session-init again with prompt-time recall turned on (issue 18).

Medians throughout; the load average is printed with the figures (the machine is shared).
"""

from __future__ import annotations

import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from memory.management.commands import bench as hooks_bench
from tests.bench import gate as gate_bench
from tests.bench import worker as worker_bench
from tests.bench.harness import (
    LiveWorker,
    child_json,
    free_port,
    migrated_and_seeded,
    scratch_dir,
    worker_env,
    write_modules,
)

SIZE = 10_000

# (key, what, target, claude-mem 13.25.3 on this kind of machine, as
# docs/reference/claude-mem-figures.md quotes it; cmem before issue 19 in brackets where it had it)
ROWS: list[tuple[str, str, str, str]] = [
    ("rss_idle", "worker memory, all processes, idle at 10k (RSS / PSS)", "<= 100 MB RSS", "99 / 97 MB, 1 process"),
    ("rss_after", "same, after a workload that loads the embedding model", "<= 160 MB RSS", "113 MB RSS"),
    ("cold_start", "cold start to first healthy answer", "<= 1.0 s", "2.09 s"),
    ("floor", "HTTP floor GET /api/health, keep-alive", "<= 0.5 ms", "0.53 ms"),
    ("floor_auth", "authenticated API call (Bearer), keep-alive", "<= 0.5 ms", "-"),
    ("search_obs", "search, observations only, 10k, keyword", "<= 2 ms", "5.45 ms"),
    ("search_mixed", "search, mixed, 10k, keyword", "<= 3 ms", "12.3-12.9 ms"),
    ("ingest", "ingest one tool use, keep-alive", "<= 1.5 ms", "5.17 ms"),
    ("by_file", "gate by-file query at 10k, HTTP, fresh connection", "<= 1 ms", "12.9 ms"),
    ("gate", "whole gate decision (file-context endpoint) at 10k", "<= 2 ms", "~26 ms inside its hook"),
    ("context_cold", "context render at 10k, cache cold", "<= 3 ms", "35 ms"),
    ("hook_ratio", "hook process / bare interpreter (fork-exec-wait)", "<= 1.3x", "15-18x node"),
]  # fmt: skip


def _ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def _get(conn: http.client.HTTPConnection, path: str, headers: dict[str, str]) -> float:
    started = time.perf_counter()
    conn.request("GET", path, headers=headers)
    resp = conn.getresponse()
    resp.read()
    elapsed = time.perf_counter() - started
    if resp.status != 200:
        raise RuntimeError(f"GET {path} answered {resp.status}")
    return elapsed


def _post(
    conn: http.client.HTTPConnection, path: str, body: bytes, headers: dict[str, str]
) -> tuple[float, bytes]:
    started = time.perf_counter()
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json", **headers})
    resp = conn.getresponse()
    data = resp.read()
    elapsed = time.perf_counter() - started
    if resp.status != 200:
        raise RuntimeError(f"POST {path} answered {resp.status}: {data[:200]!r}")
    return elapsed, data


def _memory(root: int) -> tuple[float, float, int]:
    rss = pss = 0
    pids = worker_bench._tree(root)
    for pid in pids:
        try:
            r, p, _ = worker_bench._memory_kb(pid)
        except OSError:
            continue
        rss, pss = rss + r, pss + p
    return rss / 1024, pss / 1024, len(pids)


# The hook events the bench runs through the `-I -S` entry, each with its payload maker
# (n: the run's number). file-context waits for the gate decision, context renders the
# index; the others are captures the worker stores and answers `{}`.
HOOK_EVENTS = ("file-context", "observation", "context", "session-init", "summarize")


def _hook_payload(event: str, n: int, project: Path) -> bytes:
    session = f"hook-{uuid.uuid4().hex}"
    base = {"session_id": session, "cwd": str(project)}
    if event == "file-context":
        target = str(project / gate_bench._rel(n % gate_bench.FILES))
        return json.dumps({**base, "hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": target}, "tool_use_id": "toolu_bench_hook"}).encode()  # fmt: skip
    if event == "observation":
        return hooks_bench._observation(n)
    if event == "context":
        return json.dumps({**base, "hook_event_name": "SessionStart", "source": "startup"}).encode()
    base["session_id"] = "bench-hook-session"  # one conversation: prompts, then its stops
    if event == "session-init":
        return json.dumps({**base, "hook_event_name": "UserPromptSubmit", "prompt": f"fix the cache {n}"}).encode()  # fmt: skip
    return json.dumps({**base, "hook_event_name": "Stop", "stop_hook_active": False}).encode()


def _hook_ratio(env: dict[str, str], project: Path, runs: int) -> dict[str, float]:
    """Interleaved fork/exec/wait: the bare interpreter, then the `-I -S` entry for each
    event, then `cmem hook file-context`, bare again before every hook (same stdin)."""
    from memory.agents.install.claude_code import hook_entry_argv

    python = sys.executable
    bare = [python, "-c", "pass"]
    commands = {event: [*hook_entry_argv(), "hook", "claude-code", event] for event in HOOK_EVENTS}
    commands["cmem"] = [str(Path(python).with_name("cmem")), "hook", "claude-code", "file-context"]

    def payload(name: str, n: int) -> bytes:
        return _hook_payload("file-context" if name == "cmem" else name, n, project)

    for n in range(3):  # page cache and bytecode warm
        for name, cmd in commands.items():
            subprocess.run(cmd, input=payload(name, n), env=env, capture_output=True, check=False)
    times: dict[str, list[float]] = {name: [] for name in ("bare", *commands)}
    for n in range(runs):
        for name, cmd in commands.items():
            body = payload(name, n)
            times["bare"].append(hooks_bench._time(bare, body, env))
            times[name].append(hooks_bench._time(cmd, body, env))
    return {name: _ms(t) for name, t in times.items()}


def _recall_hook_ratio(
    env: dict[str, str], project: Path, data: Path, runs: int
) -> tuple[float, float, int]:
    """session-init through the `-I -S` entry with prompt-time recall turned on in the
    running worker's settings.json (issue 18: "the hook's own latency stays within its
    bench target"), interleaved with the bare interpreter: (hook ms, bare ms, answers that
    carried notes). The prompts share the seed's words, so every answer should."""
    from memory.agents.install.claude_code import hook_entry_argv

    settings = data / "settings.json"
    before = settings.read_bytes() if settings.exists() else None
    values = json.loads(before or b"{}")
    # cmem's own layout (indent=2), which the hook client scans without importing json.
    settings.write_text(
        json.dumps({**values, "CLAUDE_MEM_SEMANTIC_INJECT": "true"}, indent=2) + "\n"
    )
    cmd, bare = (
        [*hook_entry_argv(), "hook", "claude-code", "session-init"],
        [sys.executable, "-c", "pass"],
    )
    hook_times: list[float] = []
    bare_times: list[float] = []
    with_notes = 0
    try:
        for n in range(runs + 3):
            body = _hook_payload("session-init", 10_000 + n, project)
            if n < 3:  # warm, and count what the answers carry
                done = subprocess.run(cmd, input=body, env=env, capture_output=True, check=False)
                with_notes += b"additionalContext" in done.stdout
                continue
            bare_times.append(hooks_bench._time(bare, body, env))
            hook_times.append(hooks_bench._time(cmd, body, env))
    finally:
        if before is None:
            settings.unlink(missing_ok=True)
        else:
            settings.write_bytes(before)
    return _ms(hook_times), _ms(bare_times), with_notes


def _start_timeline(env: dict[str, str], data: Path) -> tuple[LiveWorker, dict[str, float]]:
    """`cmem serve` to its first 200 from /api/health, with where the time went: the
    supervisor's pid file (its process is up), the children file (the serving process is
    spawned), the owner's socket (the serving process has bound, the app is imported)."""
    started = time.time()
    live, total = worker_bench._start(env)
    marks = {"total": total}
    for name, path in (
        ("supervisor", data / "worker.pid"),
        ("spawned", data / "worker.children"),
        ("bound", data / "worker.sock"),
    ):
        try:
            marks[name] = path.stat().st_mtime - started
        except OSError:
            marks[name] = float("nan")
    return live, marks


def run(*, out: Any, options: dict[str, Any]) -> None:
    runs = options.get("runs") or (60 if options.get("quick") else 300)
    hook_runs = max(10, runs // 10)
    figures: dict[str, str] = {}
    with scratch_dir("cmem-bench-lean-") as work:
        data, project = work / "data", work / "bench-project"
        write_modules(project, gate_bench.FILES, gate_bench._rel)
        port = free_port()
        env = worker_env(
            data, port, CLAUDE_MEM_COMPRESSOR="offline", DJANGO_SETTINGS_MODULE="cmem_site.settings"
        )
        out.write(f"seeding {SIZE:,} observations over {gate_bench.FILES:,} files…")
        seeded = migrated_and_seeded("tests.bench.gate", env, SIZE, project)
        cmem = worker_bench._cmem()
        subprocess.run([cmem, "embeddings", "backfill", "--no-progress"], env=env, check=True, capture_output=True, timeout=900)  # fmt: skip
        inproc = child_json(
            "tests.bench.gate", env, "measure", str(max(50, runs // 3)), str(project)
        )
        figures["context_cold"] = (
            f"{inproc['context_cold_p50_ms']:.2f} ms (in-process, cache invalidated)"
        )
        live, first = worker_bench._start(env)
        live.stop()
        live, marks = _start_timeline(env, data)
        assert live.proc is not None
        try:
            figures["cold_start"] = (
                f"{marks['total']:.2f} s (supervisor up {marks['supervisor']:.2f} s, serving "
                f"process spawned {marks['spawned']:.2f} s, bound {marks['bound']:.2f} s; "
                f"first start, migrations: {first:.2f} s)"
            )
            time.sleep(5)  # idle: the consumer's start-up tasks and the server settle
            rss, pss, count = _memory(live.proc.pid)
            figures["rss_idle"] = f"{rss:.1f} / {pss:.1f} MB, {count} processes"
            _http_rows(figures, port=port, data=data, project=project, seeded=seeded, runs=runs)
            time.sleep(2)
            rss, pss, count = _memory(live.proc.pid)
            figures["rss_after"] = f"{rss:.1f} / {pss:.1f} MB RSS / PSS"
            hooks = _hook_ratio(env, project, hook_runs)
            others = ", ".join(
                f"{event} {hooks[event] / hooks['bare']:.2f}x" for event in HOOK_EVENTS[1:]
            )
            figures["hook_ratio"] = (
                f"{hooks['file-context'] / hooks['bare']:.2f}x file-context with the -I -S entry "
                f"({hooks['file-context']:.1f} ms); {others}; "
                f"{hooks['cmem'] / hooks['bare']:.2f}x file-context via `cmem hook` ({hooks['cmem']:.1f} ms); "
                f"bare `python -c pass` {hooks['bare']:.1f} ms"
            )
            hook_ms, bare_ms, noted = _recall_hook_ratio(env, project, data, hook_runs)
            figures["hook_ratio"] += (
                f"; session-init with prompt-time recall on {hook_ms / bare_ms:.2f}x "
                f"({hook_ms:.1f} ms against bare {bare_ms:.1f} ms; notes in {noted} of 3 answers checked)"
            )
        finally:
            live.stop()
    load = os.getloadavg()
    out.write(
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (2 cores shared); medians, {runs} runs"
    )
    out.write("| what | cmem | target | claude-mem |")
    out.write("|---|---|---|---|")
    for key, what, target, theirs in ROWS:
        out.write(f"| {what} | {figures.get(key, 'not measured')} | {target} | {theirs} |")


def _http_rows(
    figures: dict[str, str],
    *,
    port: int,
    data: Path,
    project: Path,
    seeded: dict[str, Any],
    runs: int,
) -> None:
    secret = (data / "worker.secret").read_text().strip()
    auth = {"Authorization": f"Bearer {secret}"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    for _ in range(30):
        _get(conn, "/api/health", {})
    conn.request("GET", "/api/health")
    answer = conn.getresponse()
    answer.read()
    server = answer.getheader("Server") or "?"  # granian, or cmem when waitress serves
    figures["floor"] = (
        f"{_ms([_get(conn, '/api/health', {}) for _ in range(runs)]):.3f} ms (server: {server})"
    )
    figures["floor_auth"] = (
        f"{_ms([_get(conn, '/api/observations?ids=1', auth) for _ in range(runs)]):.3f} ms "
        "(GET /api/observations?ids=1)"
    )
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
        "retry",
    ]
    rng = random.Random(7)

    def search_path(kind: str) -> str:
        query = {"q": " ".join(rng.sample(words, 2)), "mode": "keyword", "limit": "20"}
        return "/api/search?" + urlencode({**query, **({"kind": kind} if kind else {})})

    figures["search_obs"] = (
        f"{_ms([_get(conn, search_path('observation'), auth) for _ in range(runs)]):.2f} ms"
    )
    figures["search_mixed"] = (
        f"{_ms([_get(conn, search_path(''), auth) for _ in range(runs)]):.2f} ms"
    )
    from memory.management.commands.bench import _observation

    ingest = [
        _post(conn, "/api/hooks/claude-code/observation", _observation(n), auth)[0]
        for n in range(runs)
    ]
    figures["ingest"] = f"{_ms(ingest):.2f} ms"
    name = seeded["project"]
    fresh = []
    for _ in range(runs):
        one = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        rel = gate_bench._rel(rng.randrange(gate_bench.FILES))
        fresh.append(
            _get(
                one, "/api/observations/by-file?" + urlencode({"path": rel, "project": name}), auth
            )
        )
        one.close()
    figures["by_file"] = f"{_ms(fresh):.2f} ms"
    decisions = []
    for _ in range(runs):
        body = json.dumps({
            "session_id": f"gate-{uuid.uuid4().hex}", "cwd": str(project), "hook_event_name": "PreToolUse",
            "tool_name": "Read", "tool_input": {"file_path": str(project / gate_bench._rel(rng.randrange(gate_bench.FILES)))},
            "tool_use_id": "toolu_bench_gate",
        }).encode()  # fmt: skip
        decisions.append(_post(conn, "/api/hooks/claude-code/file-context", body, auth)[0])
    figures["gate"] = f"{_ms(decisions):.2f} ms (HTTP keep-alive)"
    # A search by meaning loads the embedding model: the "after a workload" memory.
    _get(conn, "/api/search?" + urlencode({"q": "cache invalidation", "mode": "hybrid"}), auth)
    conn.close()
