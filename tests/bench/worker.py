"""`python -m tests.bench worker`: the worker's footprint, cold start and HTTP floor, as one run.

Starts `cmem serve` in a temporary data dir twice: the first start migrates a new
database, the second is a restart on an unchanged schema (the everyday case, measured as
"cold start to first healthy answer": spawn to the first 200 from /api/health). Then, idle,
the RSS and PSS of every process of the worker (the supervisor's whole tree, from /proc),
and the floor: GET /api/health on one keep-alive connection and on fresh connections.
CMEM_BENCH_CMEM names another installation's `cmem` to measure it side by side.
"""

from __future__ import annotations

import http.client
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from tests.bench.harness import LiveWorker, free_port, percentile, scratch_dir, worker_env


def _cmem() -> str:
    return os.environ.get("CMEM_BENCH_CMEM") or str(Path(sys.executable).with_name("cmem"))


def _start(env: dict[str, str]) -> tuple[LiveWorker, float]:
    """A worker on the data dir and port `env` names, and its spawn to first healthy answer."""
    live = LiveWorker(
        data_dir=Path(env["CLAUDE_MEM_DATA_DIR"]),
        port=int(env["CLAUDE_MEM_WORKER_PORT"]),
        env=env,
        cmem=_cmem(),
        poll=0.005,
    )
    started = time.perf_counter()
    live.start(60)
    return live, time.perf_counter() - started


def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def _memory_kb(pid: int) -> tuple[int, int, str]:
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, _, rest = line.partition(":")
        fields[name] = int(rest.split()[0])
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return fields.get("Rss", 0), fields.get("Pss", 0), cmdline


def _floor(port: int, runs: int, *, fresh: bool) -> list[float]:
    times = []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    for _ in range(runs):
        if fresh:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        started = time.perf_counter()
        conn.request("GET", "/api/health")
        conn.getresponse().read()
        times.append(time.perf_counter() - started)
        if fresh:
            conn.close()
    conn.close()
    return times


def run(*, out: Any, options: dict[str, Any]) -> None:
    runs = options.get("runs") or (200 if options.get("quick") else 2000)
    out.write(f"worker: {_cmem()}")
    with scratch_dir("cmem-bench-worker-") as work:
        env = worker_env(work / "data", free_port())
        live, first = _start(env)
        live.stop()
        live, cold = _start(env)
        assert live.proc is not None
        proc, port = live.proc, live.port
        try:
            out.write(f"first start (new database, migrations): {first:.2f} s")
            out.write(f"cold start to first healthy answer (schema unchanged): {cold:.2f} s")
            time.sleep(3)  # idle: the consumer and the server settle
            rss = pss = 0
            for pid in _tree(proc.pid):
                try:
                    r, p, cmd = _memory_kb(pid)
                except OSError:
                    continue
                rss, pss = rss + r, pss + p
                out.write(
                    f"  pid {pid:>7} RSS {r / 1024:6.1f} MB  PSS {p / 1024:6.1f} MB  {cmd[:70]}"
                )
            out.write(
                f"idle memory, all processes: RSS {rss / 1024:.1f} MB, PSS {pss / 1024:.1f} MB"
            )
            _floor(port, 50, fresh=False)
            keep = _floor(port, runs, fresh=False)
            fresh = _floor(port, max(50, runs // 4), fresh=True)
            out.write(
                f"HTTP floor GET /api/health keep-alive ({runs}): p50 {statistics.median(keep) * 1000:.3f} ms, "
                f"p99 {percentile(keep, 0.99) * 1000:.3f} ms"
            )
            out.write(
                f"HTTP floor GET /api/health fresh connection: p50 {statistics.median(fresh) * 1000:.3f} ms"
            )
        finally:
            live.stop()
