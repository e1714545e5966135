"""What the `cmem bench` benchmarks share: an isolated child environment, a child process
that answers in JSON, a throwaway worker's port and health, Django in the child, percentiles.

Each benchmark runs its measurements in a child process on a temporary data dir, so a
benchmark never touches the user's memory and the parent's Django state never leaks in.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Settings the parent's shell may carry that must not reach a benchmark's child.
FOREIGN_ENV_PREFIXES = ("CLAUDE_MEM_", "ANTHROPIC_", "CMEM_")


def child_env(data_dir: Path | str, **extra: str) -> dict[str, str]:
    """os.environ without cmem's or Anthropic's settings, pointed at `data_dir`, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(FOREIGN_ENV_PREFIXES)}
    env.update(CLAUDE_MEM_DATA_DIR=str(data_dir), **extra)
    return env


def cmem_migrate(env: dict[str, str], *, timeout: float = 300) -> None:
    subprocess.run(
        [sys.executable, "-m", "cmem_site.cli", "manage", "migrate", "--noinput", "-v", "0"],
        env=env,
        check=True,
        timeout=timeout,
    )


def child_json(
    module: str, env: dict[str, str], *args: str, timeout: float = 1800
) -> dict[str, Any]:
    """Run `python -m module *args` and return the JSON object on its last stdout line."""
    result = subprocess.run(
        [sys.executable, "-m", module, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if result.returncode != 0:
        raise RuntimeError(f"bench child {args[0]} failed: {result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def child_main(
    *, seed: Callable[[int, str], dict[str, Any]], measure: Callable[[int, str], dict[str, Any]]
) -> None:
    """`python -m memory.benchmarks.NAME seed|measure N PROJECT_DIR`: run that step of the
    benchmark in this (child) process and print its result as JSON for `child_json`."""
    step = {"seed": seed, "measure": measure}.get(sys.argv[1])
    if step is not None:
        print(json.dumps(step(int(sys.argv[2]), sys.argv[3])))


def bench_sizes(options: dict[str, Any]) -> list[int]:
    """The store sizes a sized benchmark runs at: `--size`, else 10k with `--quick`, else
    10k and 100k."""
    if options.get("size"):
        return [int(options["size"])]
    return [10_000] if options.get("quick") else [10_000, 100_000]


def is_bench_child(name: str) -> bool:
    """True inside the child `rerun_in_fresh_data_dir(name, ...)` started."""
    return os.environ.get(f"CMEM_BENCH_{name.upper()}_CHILD") == "1"


def rerun_in_fresh_data_dir(name: str, options: dict[str, Any], runs: int) -> None:
    """Run `cmem bench <name>` again in a child with a throwaway data dir and none of this
    environment's CLAUDE_MEM_* / CMEM_* settings, so a benchmark never touches real memory
    (the child sees `is_bench_child(name)`)."""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix=f"cmem-bench-{name}-")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_MEM_", "CMEM_"))}
    env.update({"CLAUDE_MEM_DATA_DIR": folder, f"CMEM_BENCH_{name.upper()}_CHILD": "1"})
    command = [sys.executable, "-m", "cmem_site.cli", "bench", name, "--runs", str(runs)]
    if options.get("size"):
        command += ["--size", str(options["size"])]
    elif options.get("quick"):
        command.append("--quick")
    try:
        subprocess.run(command, env=env, check=True, timeout=3600)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def django_setup() -> None:
    """Set up Django in a benchmark's child process (on the child's own data dir)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cmem_site.settings")
    import django

    django.setup()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def owner_headers(data_dir: Path | str) -> dict[str, str]:
    """The bearer header a TCP client of the benchmark's own worker sends (worker.secret)."""
    try:
        secret = (Path(data_dir) / "worker.secret").read_text().strip()
    except OSError:
        return {}
    return {"Authorization": f"Bearer {secret}"}


def wait_health(url: str, timeout: float) -> bool:
    """True once `url`/api/health answers 200, False when `timeout` seconds pass first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/api/health", timeout=0.5) as resp:
                if resp.status == 200:
                    return True
        except OSError:
            time.sleep(0.1)
    return False


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank `q` quantile (0 <= q <= 1) of `values`, in their own unit."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def zipf_cum_weights(count: int) -> list[float]:
    """Cumulative Zipf weights (rank r weighs 1/r) for `random.choices(cum_weights=...)`."""
    cumulative, total = [], 0.0
    for rank in range(count):
        total += 1.0 / (rank + 1)
        cumulative.append(total)
    return cumulative
