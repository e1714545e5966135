"""What the benchmarks share: a scratch data dir, a database migrated and seeded in a child
that answers in JSON, a throwaway worker (tests.support.worker.LiveWorker, the tests' own)
started on a free port and stopped, Django in the child, percentiles.

Each benchmark runs its measurements in a child process on a temporary data dir, so a
benchmark never touches the user's memory and the parent's Django state never leaks in.
The small helpers `cmem bench hooks` needs ship in the product (memory/management/commands/
bench.py) and are re-exported here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memory.management.commands.bench import (
    child_env,
    free_port,
    owner_headers,
    percentile,
    wait_health,
)
from tests.support.worker import LiveWorker

__all__ = [
    "REPO",
    "LiveWorker",
    "bench_sizes",
    "child_env",
    "child_json",
    "child_main",
    "cmem_migrate",
    "django_setup",
    "free_port",
    "is_bench_child",
    "migrated_and_seeded",
    "owner_headers",
    "percentile",
    "rerun_in_fresh_data_dir",
    "running_worker",
    "scratch_dir",
    "wait_health",
    "worker_env",
    "write_modules",
    "zipf_cum_weights",
]

REPO = Path(__file__).resolve().parents[2]


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
        cwd=REPO,
    )
    if result.returncode != 0:
        raise RuntimeError(f"bench child {args[0]} failed: {result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def child_main(
    *, seed: Callable[[int, str], dict[str, Any]], measure: Callable[[int, str], dict[str, Any]]
) -> None:
    """`python -m tests.bench.NAME seed|measure N PROJECT_DIR`: run that step of the
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


def rerun_in_fresh_data_dir(
    name: str,
    options: dict[str, Any],
    runs: int,
    *,
    keep: str | None = None,
    args: tuple[str, ...] = (),
) -> None:
    """Run `python -m tests.bench <name>` again (with `args` added) in a child with a
    throwaway data dir (or `keep`, kept for the next run) and none of this environment's CLAUDE_MEM_* / CMEM_*
    settings, so a benchmark never touches real memory (the child sees `is_bench_child(name)`)."""
    import shutil
    import tempfile

    folder = keep or tempfile.mkdtemp(prefix=f"cmem-bench-{name}-")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_MEM_", "CMEM_"))}
    env.update({"CLAUDE_MEM_DATA_DIR": folder, f"CMEM_BENCH_{name.upper()}_CHILD": "1"})
    command = [sys.executable, "-m", "tests.bench", name, "--runs", str(runs)]
    if options.get("size"):
        command += ["--size", str(options["size"])]
    elif options.get("quick"):
        command.append("--quick")
    command += args
    try:
        subprocess.run(command, env=env, check=True, timeout=3600, cwd=REPO)
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def django_setup() -> None:
    """Set up Django in a benchmark's child process (on the child's own data dir)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cmem_site.settings")
    import django

    django.setup()


def zipf_cum_weights(count: int) -> list[float]:
    """Cumulative Zipf weights (rank r weighs 1/r) for `random.choices(cum_weights=...)`."""
    cumulative, total = [], 0.0
    for rank in range(count):
        total += 1.0 / (rank + 1)
        cumulative.append(total)
    return cumulative


# -- the one "seed a database / start a worker" helper the benchmarks share -------------------


@contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A throwaway folder with an owner-only `data/` inside (the data dir), removed after."""
    import shutil
    import tempfile

    work = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        (work / "data").mkdir(mode=0o700)
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def write_modules(project: Path, count: int, rel: Callable[[int], str], seed: int = 3) -> None:
    """`count` Python files of 50-150 padding lines at `project / rel(i)`."""
    import random

    rng = random.Random(seed)
    for i in range(count):
        path = project / rel(i)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            f"# module {i}\n" + "value = compute(value)  # padding line\n" * rng.randrange(50, 150)
        )


def migrated_and_seeded(
    module: str, env: dict[str, str], size: int, project: Path | str, *, timeout: float = 1800
) -> dict[str, Any]:
    """Migrate the data dir `env` names, then `python -m module seed SIZE PROJECT` (the
    benchmark's own `child_seed`, in a child) and return what it answered."""
    cmem_migrate(env)
    return child_json(module, env, "seed", str(size), str(project), timeout=timeout)


def worker_env(data: Path, port: int, **extra: str) -> dict[str, str]:
    """child_env for a worker on 127.0.0.1:`port`; bytecode caches on, as in a real install
    (a dev shell's PYTHONDONTWRITEBYTECODE would measure the compiler instead)."""
    env = child_env(
        data, CLAUDE_MEM_WORKER_PORT=str(port), CLAUDE_MEM_WORKER_HOST="127.0.0.1", **extra
    )
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


@contextmanager
def running_worker(
    env: dict[str, str],
    *serve_args: str,
    cmem: str | None = None,
    timeout: float = 60,
    poll: float = 0.1,
) -> Iterator[LiveWorker]:
    """`cmem serve` on the data dir and port `env` names (see worker_env), healthy, stopped after."""
    live = LiveWorker(
        data_dir=Path(env["CLAUDE_MEM_DATA_DIR"]),
        port=int(env["CLAUDE_MEM_WORKER_PORT"]),
        env=env,
        serve_args=serve_args,
        poll=poll,
    )
    if cmem:
        live.cmem = cmem
    live.start(timeout)
    try:
        yield live
    finally:
        live.stop()
