"""`python -m tests.bench cli` (`cmem bench cli` in a checkout): what each CLI verb costs.

A scratch data dir with the demo history and a running worker, then each verb's wall time
(fork, exec, exit; output to a pipe) as the median of `--runs` runs (default 15), beside
`python -c pass` of the same interpreter (the floor any Python CLI pays): the verbs that only
talk to the worker answer from cmem_site/quick.py without Django; `stats` and the usage
errors are listed for comparison. Then the worker's own lifecycle: `cmem stop` of a running
worker, `cmem start` of a stopped one (to healthy: it returns when /api/health answers) and
`cmem start` of a running one. Then `cmem mcp`: spawn to the answer of `initialize`.

claude-mem's start is measured beside cmem's when `CMEM_BENCH_CLAUDE_MEM` (or /tmp/cm) holds
a claude-mem 13.25.3 install (the recipe: docs/benchmarks/search.md); otherwise that row
says it was not measured. Medians; the load average is printed (the machine is shared).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support import free_port, make_worker_env
from tests.support.paths import CMEM

VERBS: tuple[tuple[str, ...], ...] = (
    ("--version",),
    ("status",),
    ("search", "checkout"),
    ("search",),
    ("show", "1", "2"),
    ("timeline", "2"),
    ("logs", "-n", "20"),
    ("open", "--print"),
    ("hook", "--help"),
    ("search", "--help"),
    ("stats",),
    ("install", "--agent", "nosuch"),
    ("search", "--limit", "x"),
)


def _timed(run: Callable[[], object]) -> float:
    began = time.perf_counter()
    run()
    return (time.perf_counter() - began) * 1000


def _median(runs: int, run: Callable[[], object]) -> float:
    return statistics.median(_timed(run) for _ in range(runs))


def _cmem(env: dict[str, str], *args: str, check: bool = False) -> None:
    subprocess.run([CMEM, *args], env=env, capture_output=True, timeout=120, check=check)


def mcp_initialize_ms(env: dict[str, str]) -> float:
    """Spawn `cmem mcp` and time the answer to `initialize` (what an agent waits for)."""
    request = {
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}},
    }  # fmt: skip
    began = time.perf_counter()
    proc = subprocess.Popen(
        [CMEM, "mcp"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write((json.dumps(request) + "\n").encode())
    proc.stdin.flush()
    proc.stdout.readline()
    took = (time.perf_counter() - began) * 1000
    proc.stdin.close()
    proc.kill()
    proc.wait()
    return took


def claude_mem_start_ms(runs: int) -> tuple[float, float] | str:
    """claude-mem's `start` (to its /api/health) and `stop`, medians; or why not measured."""
    raw = os.environ.get("CMEM_BENCH_CLAUDE_MEM") or "/tmp/cm"
    install = Path(raw)
    if not (install / "node_modules" / "claude-mem").is_dir():
        return f"not measured: no claude-mem install at {install} (set CMEM_BENCH_CLAUDE_MEM)"
    # only with claude-mem installed: versus.py drives it (node, bun, its worker script)
    from tests.bench.versus import _claude_mem, _claude_mem_env

    home = install / "home"
    home.mkdir(exist_ok=True)
    env = _claude_mem_env(install, home, free_port())
    starts, stops = [], []
    for _ in range(runs):
        starts.append(_timed(lambda: _claude_mem(env, "start")))
        stops.append(_timed(lambda: _claude_mem(env, "stop")))
    return statistics.median(starts), statistics.median(stops)


def run(*, out: Any, options: dict[str, Any]) -> None:
    runs = options.get("runs") or (5 if options.get("quick") else 15)
    python_pass = _median(runs, lambda: subprocess.run([sys.executable, "-c", "pass"], check=True))
    with tempfile.TemporaryDirectory(prefix="cmem-bench-cli-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir(mode=0o700)
        env = make_worker_env(data, free_port())
        # Bytecode caches on, as in a real install: a dev shell's PYTHONDONTWRITEBYTECODE
        # made every start compile whatever had no cache yet, and timed the compiler.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        _cmem(env, "start", check=True)  # migrates the new data dir
        try:
            _cmem(env, "demo", check=True)
            rows = []
            for args in VERBS:
                took = _median(runs, lambda args=args: _cmem(env, *args))
                rows.append((" ".join(args), took))
            initialize = statistics.median(mcp_initialize_ms(env) for _ in range(runs))
            start_running = _median(runs, lambda: _cmem(env, "start"))
            stops, starts = [], []
            for _ in range(max(3, runs // 3)):
                stops.append(_timed(lambda: _cmem(env, "stop")))
                starts.append(_timed(lambda: _cmem(env, "start")))
        finally:
            _cmem(env, "stop")
    load = os.getloadavg()
    out.write(
        f"{runs} runs each, medians, worker up, output to a pipe; load "
        f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} cores"
    )
    out.write("| command | median ms | × python -c pass |")
    out.write("|---|---:|---:|")
    out.write(f"| python -c pass | {python_pass:.0f} | 1.0 |")
    for name, took in rows:
        out.write(f"| cmem {name} | {took:.0f} | {took / python_pass:.1f} |")
    out.write(
        f"| cmem start (already running) | {start_running:.0f} | {start_running / python_pass:.1f} |"
    )
    out.write(
        f"| cmem stop | {statistics.median(stops):.0f} | {statistics.median(stops) / python_pass:.1f} |"
    )
    out.write(
        f"| cmem start (stopped, to healthy) | {statistics.median(starts):.0f} | {statistics.median(starts) / python_pass:.1f} |"
    )
    out.write(
        f"| cmem mcp: spawn to `initialize` answered | {initialize:.0f} | {initialize / python_pass:.1f} |"
    )
    theirs = claude_mem_start_ms(max(3, runs // 3))
    if isinstance(theirs, str):
        out.write(f"\nclaude-mem start: {theirs}")
    else:
        out.write(
            f"| claude-mem start (to healthy) | {theirs[0]:.0f} | {theirs[0] / python_pass:.1f} |"
        )
        out.write(f"| claude-mem stop | {theirs[1]:.0f} | {theirs[1] / python_pass:.1f} |")
