"""`python -m tests.bench NAME` (`make bench NAME=...`): run a benchmark and print its figures.

Each benchmark is a module tests/bench/<name>.py with `run(*, out, options) -> None` (`hooks`
is the one that ships: `cmem bench hooks`, memory/management/commands/bench.py). The options
are the old `cmem bench` command's: --quick, --size, --runs, --seconds (and public_recall's
--half, --keep, --reuse; scale's --sizes, --backend, --keep); `all` runs every one,
reporting those whose module cannot import (an extra not installed) as not available.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, TextIO

BENCHMARKS = [
    "lean",
    "worker",
    "hooks",
    "compress",
    "gate",
    "search",
    "outline",
    "load",
    "scale",
    "recall",
    "public_recall",
    "recall_pg",
    "pg_search",
    "vectors",
    "vector_memory",
    "ondisk_speed",
    "embedding_model",
    "offline",
    "economy",
    "handover",
    "consolidation",
    "index_consolidation",
    "import_rate",
    "versus",
    "startup",
    "sync",
    "cli",
]
# Where a benchmark lives when not in tests/bench/.
MODULES = {"hooks": "memory.management.commands.bench"}


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="python -m tests.bench",
        description="Run a benchmark and print its figures: " + ", ".join(BENCHMARKS) + ", or all.",
    )
    found.add_argument("name", choices=[*BENCHMARKS, "all"])
    found.add_argument("--quick", action="store_true", help="Smaller sizes, for a smoke run.")
    found.add_argument("--size", type=int, default=None, help="Rows to seed where it applies.")
    found.add_argument("--runs", type=int, default=None, help="Repetitions where it applies.")
    found.add_argument(
        "--seconds", type=int, default=None, help="Soak length in seconds (bench load)."
    )
    found.add_argument(
        "--hot", type=int, default=None, help="bench gate: rows of one file's history (a hot file)."
    )
    # bench scale: the store sizes and the backends of its matrix.
    found.add_argument("--sizes", default=None, help="bench scale: sizes, e.g. 10000,100000.")
    found.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default=None)
    # bench public_recall: which half, and a data dir to keep the loaded store in or reuse.
    found.add_argument("--half", choices=["tuning", "heldout"], default=None)
    found.add_argument(
        "--keep", default=None, help="Keep the loaded (scale: seeded) store in this dir."
    )
    found.add_argument("--reuse", default=None, help="Reuse the store a --keep run left here.")
    return found


def main(argv: list[str], stdout: TextIO | None = None) -> int:
    from django.core.management.base import OutputWrapper

    options: dict[str, Any] = vars(parser().parse_args(argv))
    out, err = OutputWrapper(stdout or sys.stdout), OutputWrapper(sys.stderr)
    names = BENCHMARKS if options["name"] == "all" else [options["name"]]
    for name in names:
        try:
            module = importlib.import_module(MODULES.get(name, f"tests.bench.{name}"))
        except ModuleNotFoundError as exc:
            if options["name"] == "all":
                err.write(f"bench {name}: not available ({exc})")
                continue
            err.write(f"bench {name} is not available: {exc}")
            return 1
        out.write(f"== bench {name} ==")
        module.run(out=out, options=options)
    return 0
