"""`python -m tests.bench load`: many hook clients against one worker, then a bounded soak.

Load: 16 client processes each send a prompt and 1,000 tool uses (`--size` changes the
count) through the hook client's own code (`memory.hookclient.client.run`: the raw-socket POST,
and the spool when the worker is slow), all at once, to one `cmem serve` in a temporary
data dir with the offline compressor. Then it waits for the spool and the queue to drain
and checks, in the database: every event stored, none twice, every one compressed. It prints
ingest latency per hook call (p50/p95/p99/max) and throughput.

Soak: for `--seconds` (default 600; 60 with `--quick`) a steady mix of tool uses,
SessionStart context, file-read gate calls and searches, while RSS and open file
descriptors of every worker process (the supervisor and the serving process) are
sampled every few seconds. It prints first/last/max per process and the growth between the
first and the last quarter of the run: a leak shows as steady growth, not as a warm-up step.
"""

from __future__ import annotations

import contextlib
import io
import json
import multiprocessing
import os
import sqlite3
import statistics
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.bench.harness import (
    free_port,
    owner_headers,
    percentile,
    running_worker,
    scratch_dir,
    worker_env,
)

CLIENTS = 16
EVENTS = 1000
SAMPLE_EVERY_S = 5.0


# -- the worker ---------------------------------------------------------------------------------


def _worker_env(data: Path, port: int) -> dict[str, str]:
    return worker_env(data, port, CLAUDE_MEM_COMPRESSOR="offline")


# -- the clients (separate processes: real concurrency, like parallel agents) --------------------


def _client(args: tuple[str, int, int, int]) -> list[float]:
    """One agent session: a prompt, then `events` tool uses, each through the hook client."""
    data_dir, index, events, first = args
    os.environ["CLAUDE_MEM_DATA_DIR"] = data_dir
    from memory.hookclient import client as hookclient

    session = f"load-{index:02d}"
    base = {
        "session_id": session,
        "transcript_path": f"/tmp/{session}.jsonl",
        "cwd": f"/tmp/cmem-load/project-{index % 4}",
        "permission_mode": "default",
        "prompt_id": f"{session}-p1",
    }
    times: list[float] = []
    sink = io.TextIOWrapper(io.BytesIO())
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(io.StringIO()):
        hookclient.run(
            "claude-code",
            "session-init",
            json.dumps(
                {**base, "hook_event_name": "UserPromptSubmit", "prompt": "load test"}
            ).encode(),
        )
        for n in range(first, first + events):
            body = json.dumps(
                {
                    **base,
                    "hook_event_name": "PostToolUse",
                    "tool_name": "Bash",
                    "tool_input": {"command": f"echo step {n}", "description": "a step"},
                    "tool_response": {
                        "stdout": f"step {n}\n" * 20,
                        "stderr": "",
                        "interrupted": False,
                    },
                    "tool_use_id": f"toolu_{session}_{n:06d}",
                    "duration_ms": 5,
                }
            ).encode()
            started = time.perf_counter()
            hookclient.run("claude-code", "observation", body)
            times.append(time.perf_counter() - started)
            sink.seek(0)
            sink.truncate()
    return times


def _counts(db: Path) -> dict[str, int]:
    with contextlib.closing(sqlite3.connect(db, timeout=30)) as conn:
        one = lambda sql: int(conn.execute(sql).fetchone()[0])  # noqa: E731
        return {
            "events": one("SELECT COUNT(*) FROM memory_event WHERE kind='observation'"),
            "distinct": one(
                "SELECT COUNT(DISTINCT session_id || '/' || tool_use_id) FROM memory_event WHERE kind='observation'"
            ),
            "done": one(
                "SELECT COUNT(*) FROM memory_event WHERE kind='observation' AND status='done'"
            ),
            "failed": one("SELECT COUNT(*) FROM memory_event WHERE status='failed'"),
            "observations": one("SELECT COUNT(*) FROM memory_observation"),
        }


def _spooled(data: Path) -> int:
    folder = data / "spool"
    return sum(
        1
        for sub in (folder, folder / "claimed")
        if sub.is_dir()
        for p in sub.iterdir()
        if p.suffix == ".hook"
    )


def load_phase(
    *, out: Any, data: Path, clients: int, events: int, drain_timeout: float
) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    started = time.perf_counter()
    with ctx.Pool(clients) as pool:
        results = pool.map(_client, [(str(data), i, events, 0) for i in range(clients)])
    elapsed = time.perf_counter() - started
    times = [t for r in results for t in r]
    spooled_at_end = _spooled(data)
    expected = clients * events
    deadline = time.monotonic() + drain_timeout
    counts = _counts(data / "cmem.sqlite3")
    while time.monotonic() < deadline and (
        counts["events"] < expected
        or counts["done"] + counts["failed"] < expected
        or _spooled(data)
    ):
        time.sleep(1.0)
        counts = _counts(data / "cmem.sqlite3")
    drained = time.perf_counter() - started
    if counts["done"] < expected:
        _explain_stuck(out, data)
    figures = {
        "expected": expected,
        **counts,
        "lost": expected - counts["distinct"],
        "duplicates": counts["events"] - counts["distinct"],
        "spooled": spooled_at_end,
        "p50_ms": statistics.median(times) * 1000,
        "p95_ms": percentile(times, 0.95) * 1000,
        "p99_ms": percentile(times, 0.99) * 1000,
        "max_ms": max(times) * 1000,
        "per_second": len(times) / elapsed,
        "send_s": elapsed,
        "drain_s": drained,
    }
    out.write(
        f"load: {clients} concurrent hook clients x {events:,} tool uses = {expected:,} events"
    )
    out.write(
        f"  hook call latency: p50 {figures['p50_ms']:.1f} ms, p95 {figures['p95_ms']:.1f} ms, "
        f"p99 {figures['p99_ms']:.1f} ms, max {figures['max_ms']:.1f} ms"
    )
    out.write(
        f"  sent in {elapsed:.1f} s ({figures['per_second']:.0f} events/s); {spooled_at_end} spooled at the end of sending"
    )
    out.write(
        f"  stored {counts['events']:,} (distinct {counts['distinct']:,}): lost {figures['lost']}, "
        f"duplicates {figures['duplicates']}; compressed {counts['done']:,} "
        f"into {counts['observations']:,} observations, failed {counts['failed']}; "
        f"all drained {drained:.1f} s after the start"
    )
    return figures


def _explain_stuck(out: Any, data: Path) -> None:
    """Not drained in time: which events wait, and the last errors in the worker's logs."""
    with contextlib.closing(sqlite3.connect(data / "cmem.sqlite3", timeout=30)) as conn:
        rows = conn.execute(
            "SELECT id, session_id, status, attempts, claimed_at, substr(last_error, 1, 200) "
            "FROM memory_event WHERE status != 'done' ORDER BY id LIMIT 20"
        ).fetchall()
    out.write(f"  NOT DRAINED: {rows}")
    for log in sorted((data / "logs").glob("*.log")):
        errors = [
            line
            for line in log.read_text(errors="replace").splitlines()
            if "ERROR" in line or "WARNING" in line
        ]
        for line in errors[-10:]:
            out.write(f"  {log.name}: {line[:300]}")


# -- the soak ----------------------------------------------------------------------------------


def _worker_pids(data: Path) -> dict[str, int]:
    from memory.runtime.processes import group_members

    pids: dict[str, int] = {}
    with contextlib.suppress(OSError, ValueError):
        pids["supervisor"] = int((data / "worker.pid").read_text().split()[0])
    try:
        children = json.loads((data / "worker.children").read_text())
    except (OSError, ValueError):
        children = {}
    for name, pid in children.items():
        if int(pid) in pids.values():
            continue  # one serving process runs both the server and the consumer
        members = sorted(group_members(int(pid)))
        for i, member in enumerate(members):
            pids[name if member == int(pid) else f"{name}-child{i}"] = member
    return pids


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def soak_phase(*, out: Any, data: Path, port: int, seconds: int) -> dict[str, Any]:
    from memory.hookclient import client as hookclient

    os.environ["CLAUDE_MEM_DATA_DIR"] = str(data)
    samples: dict[str, list[tuple[float, int, int]]] = {}
    started = time.monotonic()
    next_sample = started
    n = 0
    sink = io.TextIOWrapper(io.BytesIO())
    base = {
        "session_id": "soak",
        "cwd": "/tmp/cmem-load/project-0",
        "transcript_path": "/tmp/soak.jsonl",
    }
    while time.monotonic() - started < seconds:
        now = time.monotonic()
        if now >= next_sample:
            for name, pid in _worker_pids(data).items():
                with contextlib.suppress(OSError):
                    samples.setdefault(name, []).append((now - started, _rss_kb(pid), _fds(pid)))
            next_sample = now + SAMPLE_EVERY_S
        n += 1
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(io.StringIO()):
            hookclient.run(
                "claude-code",
                "observation",
                json.dumps(
                    {
                        **base,
                        "hook_event_name": "PostToolUse",
                        "tool_name": "Read",
                        "tool_input": {"file_path": f"/tmp/cmem-load/project-0/f{n % 50}.py"},
                        "tool_response": {"file": {"content": "x = 1\n" * 30}},
                        "tool_use_id": f"toolu_soak_{n:07d}",
                    }
                ).encode(),
            )
            if n % 10 == 0:
                hookclient.run(
                    "claude-code",
                    "file-context",
                    json.dumps(
                        {
                            **base,
                            "hook_event_name": "PreToolUse",
                            "tool_name": "Read",
                            "tool_input": {"file_path": f"/tmp/cmem-load/project-0/f{n % 50}.py"},
                        }
                    ).encode(),
                )
            if n % 50 == 0:
                hookclient.run(
                    "claude-code",
                    "context",
                    json.dumps(
                        {**base, "hook_event_name": "SessionStart", "source": "startup"}
                    ).encode(),
                )
                with contextlib.suppress(OSError):
                    urllib.request.urlopen(
                        urllib.request.Request(
                            f"http://127.0.0.1:{port}/api/search?query=step",
                            headers=owner_headers(data),
                        ),
                        timeout=5,
                    ).read()
        sink.seek(0)
        sink.truncate()
        time.sleep(0.05)
    out.write(
        f"soak: {seconds} s, {n:,} tool uses (+ gate, context and search calls), sampled every {SAMPLE_EVERY_S:.0f} s"
    )
    report: dict[str, Any] = {"seconds": seconds, "events": n, "processes": {}}
    for name, rows in sorted(samples.items()):
        if len(rows) < 2:
            continue
        quarter = max(1, len(rows) // 4)
        early_rss = statistics.median(r[1] for r in rows[:quarter])
        late_rss = statistics.median(r[1] for r in rows[-quarter:])
        early_fd = statistics.median(r[2] for r in rows[:quarter])
        late_fd = statistics.median(r[2] for r in rows[-quarter:])
        entry = {
            "rss_first_kb": rows[0][1],
            "rss_last_kb": rows[-1][1],
            "rss_max_kb": max(r[1] for r in rows),
            "rss_growth_kb": late_rss - early_rss,
            "fds_first": rows[0][2],
            "fds_last": rows[-1][2],
            "fds_max": max(r[2] for r in rows),
            "fds_growth": late_fd - early_fd,
        }
        report["processes"][name] = entry
        out.write(
            f"  {name:<18} RSS {entry['rss_first_kb'] / 1024:6.1f} -> {entry['rss_last_kb'] / 1024:6.1f} MB "
            f"(max {entry['rss_max_kb'] / 1024:.1f}, first->last quarter {entry['rss_growth_kb'] / 1024:+.1f} MB); "
            f"fds {entry['fds_first']} -> {entry['fds_last']} (max {entry['fds_max']}, {entry['fds_growth']:+.0f})"
        )
    return report


# -- entry ------------------------------------------------------------------------------------


def run(*, out: Any, options: dict[str, Any]) -> None:
    quick = bool(options.get("quick"))
    events = options.get("size") or (100 if quick else EVENTS)
    seconds = options.get("seconds")
    if seconds is None:
        seconds = 30 if quick else 600
    saved = {k: os.environ.get(k) for k in ("CLAUDE_MEM_DATA_DIR", "CLAUDE_MEM_WORKER_URL")}
    with scratch_dir("cmem-bench-load-") as work:
        data, port = work / "data", free_port()
        try:
            with running_worker(_worker_env(data, port), timeout=120):
                os.environ.pop("CLAUDE_MEM_WORKER_URL", None)
                load = load_phase(
                    out=out,
                    data=data,
                    clients=CLIENTS,
                    events=events,
                    drain_timeout=300 if not quick else 120,
                )
                soak = (
                    soak_phase(out=out, data=data, port=port, seconds=seconds)
                    if seconds > 0
                    else {}
                )
                if options.get("json"):
                    out.write(json.dumps({"load": load, "soak": soak}, indent=1))
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
