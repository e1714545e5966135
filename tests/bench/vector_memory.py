"""`python -m tests.bench vector_memory`: worker memory after a hybrid workload, per vector index.

Issue 33's memory target, measured as the user sees it: RSS summed over the worker's
processes (`cmem serve` and its children, mapped file pages included, from
/proc/<pid>/smaps_rollup). Per size (default 10,000 and 100,000; `--size`), one temporary
data dir: migrated, filled with filler observations and random unit vectors stored under
the bundled model's version (`recall._pad`: what costs memory is the count of vectors, not
their meaning; embedding 100k rows here would take most of an hour). Then, for
`CLAUDE_MEM_VECTOR_INDEX` = `scan` (every vector in the heap; up to 100k only, it would be
1.5 GB at 1M) and `disk` (the int8 copy read in chunks), a real worker is started with
`CLAUDE_MEM_EMBEDDINGS_IDLE_SECONDS=20`, and: idle RSS; searches until the disk copy, which
the first search starts building in the background, is ready (how long is reported);
`--runs` hybrid searches over HTTP (default 30, varied texts, a third filtered to one
project); RSS after; then RSS again once the encoder process has been idle past its limit
and ended. PSS is reported beside it (a page several processes share counted once), and
per process where its RSS is (`_largest`).
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from tests.bench import worker as worker_bench
from tests.bench.harness import (
    bench_sizes,
    child_json,
    cmem_migrate,
    django_setup,
    free_port,
    scratch_dir,
    worker_env,
)

IDLE_SECONDS = 20
TEXTS = (
    "cache invalidation after a deploy", "why did refunds disagree with checkout totals",
    "redis connection pool exhausted", "flaky test in the payment webhook",
    "migrating the session store", "slow query on the orders table",
)  # fmt: skip


def _tree_rss_mb(root: int) -> float:
    total = 0
    for pid in worker_bench._tree(root):
        try:
            total += worker_bench._memory_kb(pid)[0]
        except OSError:
            continue
    return total / 1024


def _breakdown(root: int) -> str:
    """Per process: RSS, and of it anonymous (heap) against file-backed (libraries, data)."""
    parts = []
    for pid in worker_bench._tree(root):
        try:
            fields = {}
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
                name, _, rest = line.partition(":")
                fields[name] = int(rest.split()[0]) / 1024
            argv = Path(f"/proc/{pid}/cmdline").read_text().split("\0")
        except OSError:
            continue
        what = " ".join(a.rsplit("/", 1)[-1] for a in argv[:3] if a)
        parts.append(
            f"{what} {fields['Rss']:.0f} ({fields['Anonymous']:.0f} anon; {_largest(pid)})"
        )
    return "; ".join(parts)


def _tree_pss_mb(root: int) -> float:
    """The same processes' PSS: a page two of them share (the interpreter, numpy's
    libraries) counted once, split between them."""
    total = 0
    for pid in worker_bench._tree(root):
        try:
            total += worker_bench._memory_kb(pid)[1]
        except OSError:
            continue
    return total / 1024


def _largest(pid: int, count: int = 6) -> str:
    """Where one process's RSS is: its mappings summed by what backs them (a library's file
    name, `[heap]`, `anon` for unnamed mappings: thread stacks, malloc's other arenas,
    ONNX Runtime's and numpy's buffers), largest first."""
    sizes: dict[str, int] = {}
    name = "?"
    try:
        lines = Path(f"/proc/{pid}/smaps").read_text().splitlines()
    except OSError:
        return ""
    for line in lines:
        head = line.split(None, 5)
        if len(head) >= 5 and "-" in head[0] and not line.endswith("kB"):
            name = head[5].rsplit("/", 1)[-1] if len(head) > 5 else "anon"
        elif line.startswith("Rss:"):
            sizes[name] = sizes.get(name, 0) + int(line.split()[1])
    top = sorted(sizes.items(), key=lambda item: -item[1])[:count]
    return ", ".join(f"{what} {kb / 1024:.0f}" for what, kb in top)


def _copy_ready(port: int, secret: str, within: float = 1800) -> float:
    """Search until the answer's note no longer says the vector copy is being built (the
    first search starts its build in the background and answers by keyword meanwhile), so
    that the measured searches are hybrid ones; returns the seconds it took."""
    auth = {"Authorization": f"Bearer {secret}"}
    began = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        while time.perf_counter() - began < within:
            conn.request("GET", "/api/search?" + urlencode({"q": TEXTS[0]}), headers=auth)
            resp = conn.getresponse()
            if "being built" not in json.loads(resp.read()).get("note", ""):
                return time.perf_counter() - began
            time.sleep(0.5)
    finally:
        conn.close()
    raise RuntimeError(f"the vector copy was not built within {within:.0f} s")


def _workload(port: int, secret: str, runs: int) -> None:
    auth = {"Authorization": f"Bearer {secret}"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        for n in range(runs):
            params = {"q": TEXTS[n % len(TEXTS)], "mode": "hybrid"}
            if n % 3 == 2:
                params["project"] = "filler"
            conn.request("GET", "/api/search?" + urlencode(params), headers=auth)
            resp = conn.getresponse()
            resp.read()
            if resp.status != 200:
                raise RuntimeError(f"search answered {resp.status}")
    finally:
        conn.close()


def _measure(env: dict[str, str], runs: int) -> dict[str, Any]:
    live, _ = worker_bench._start(env)
    assert live.proc is not None
    try:
        time.sleep(5)  # the consumer's start-up tasks settle
        idle = _tree_rss_mb(live.proc.pid)
        secret = (live.data_dir / "worker.secret").read_text().strip()
        ready_s = _copy_ready(live.port, secret)
        began = time.perf_counter()
        _workload(live.port, secret, runs)
        elapsed = time.perf_counter() - began
        time.sleep(2)
        after = _tree_rss_mb(live.proc.pid)
        after_pss = _tree_pss_mb(live.proc.pid)
        after_detail = _breakdown(live.proc.pid)
        time.sleep(IDLE_SECONDS + 8)  # past the limit and the watcher's next look
        unloaded = _tree_rss_mb(live.proc.pid)
        unloaded_pss = _tree_pss_mb(live.proc.pid)
        unloaded_detail = _breakdown(live.proc.pid)
    finally:
        live.stop()
    return {
        "idle": idle,
        "after": after,
        "unloaded": unloaded,
        "pss": f"{after_pss:.1f} / {unloaded_pss:.1f} MB",
        "search_s": elapsed / runs,
        "ready_s": ready_s,
        "detail": f"after: {after_detail}. unloaded: {unloaded_detail}",
    }


def child_pad(size: int) -> dict[str, Any]:
    django_setup()
    # after django.setup(), in the child: these import Django models
    from memory.retrieval.embeddings import transformer
    from tests.bench.recall import _pad

    _pad(size, 384, transformer.VERSION)
    return {"size": size}


def run(*, out: Any, options: dict[str, Any]) -> None:
    runs = options.get("runs") or 30
    out.write(
        "| observations | index | idle | after the hybrid workload | after the idle unload "
        "| PSS after / unloaded | first search to copy built | hybrid mean | load |"
    )
    out.write("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    details = []
    for size in bench_sizes(options):
        with scratch_dir("cmem-bench-vecmem-") as work:
            data = work / "data"
            # The scan holds every vector in the heap: 1.5 GB at 1M, measured up to 100k.
            for index_name in ("scan", "disk") if size <= 100_000 else ("disk",):
                env = worker_env(
                    data,
                    free_port(),
                    CLAUDE_MEM_COMPRESSOR="offline",
                    DJANGO_SETTINGS_MODULE="cmem_site.settings",
                    CLAUDE_MEM_VECTOR_INDEX=index_name,
                    CLAUDE_MEM_EMBEDDINGS_IDLE_SECONDS=str(IDLE_SECONDS),
                )
                if index_name == "scan" or size > 100_000:
                    cmem_migrate(env)
                    child_json("tests.bench.vector_memory", env, "pad", str(size), timeout=3600)
                got = _measure(env, runs)
                out.write(
                    f"| {size:,} | {index_name} | {got['idle']:.1f} MB | {got['after']:.1f} MB "
                    f"| {got['unloaded']:.1f} MB | {got['pss']} | {got['ready_s']:.1f} s "
                    f"| {got['search_s'] * 1000:.0f} ms "
                    f"| {os.getloadavg()[0]:.1f} |"
                )
                details.append(f"{size:,} {index_name}: {got['detail']}")
    out.write("Processes (MB RSS, of it anonymous; the largest mappings):")
    for line in details:
        out.write(f"- {line}")


def pipe_cost(runs: int) -> None:
    """What the encoder's process costs a query: the in-process encoder and the child asked
    in turn, one short text each (`python -m tests.bench.vector_memory pipe [RUNS]`)."""
    import statistics

    from memory.retrieval.embeddings import transformer
    from memory.retrieval.embeddings.encoder import ChildEncoder

    inproc, child = transformer.load(), ChildEncoder("", transformer.VERSION)
    try:
        child.encode(list(TEXTS))  # both warm
        inproc.embed(list(TEXTS))
        wall: dict[str, list[float]] = {"in process": [], "encoder process": []}
        cpu: dict[str, list[float]] = {"in process": [], "encoder process": []}
        for n in range(runs):
            text = f"{TEXTS[n % len(TEXTS)]} {n}"
            for name, call in (("in process", inproc.embed), ("encoder process", child.encode)):
                began, began_cpu = time.perf_counter(), time.process_time()
                call([text])
                wall[name].append((time.perf_counter() - began) * 1000)
                cpu[name].append((time.process_time() - began_cpu) * 1000)
        for name in wall:
            print(
                f"{name}: wall p50 {statistics.median(wall[name]):.2f} ms, p90 "
                f"{statistics.quantiles(wall[name], n=10)[-1]:.2f} ms; this process's CPU p50 "
                f"{statistics.median(cpu[name]):.2f} ms"
            )
        print(f"{runs} texts each, load average {os.getloadavg()[0]:.1f}")
    finally:
        child.close()


if __name__ == "__main__":
    if sys.argv[1:2] == ["pad"]:
        print(json.dumps(child_pad(int(sys.argv[2]))))
    elif sys.argv[1:2] == ["pipe"]:
        pipe_cost(int(sys.argv[2]) if len(sys.argv) > 2 else 150)
    else:
        subprocess.run(
            [sys.executable, "-m", "tests.bench", "vector_memory", *sys.argv[1:]], check=True
        )
