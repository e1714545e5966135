"""`python -m tests.bench sync [--size N]`: what `cmem sync` costs through a git remote.

Two throwaway data dirs play two machines and a bare repository in the same scratch
folder plays the remote (a local path: the figures are cmem's and git's work, not a
network's). Machine A gets N observations (default 10,000; 20 per session, as
import_rate generates them, through `cmem import json`), then:

1. first push: `cmem sync --remote R` on A (every row exported, one commit, pushed);
2. first pull: `cmem sync --remote R` on the empty machine B (every file imported);
3. incremental: 10 new observations on A, `cmem sync` on A (push) then on B (pull).

Each step is a real `cmem` process: "wall" includes its start (Django's setup, ~1-2 s),
"sync" is the engine's own time as it reports it, and "git" the part of that spent
waiting for git. The remote's size is `du` of the bare repository (loose objects, as a
push leaves them) and after `git gc`, per 1,000 observations.
"""

from __future__ import annotations

import re
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.bench.harness import cmem_migrate, scratch_dir
from tests.bench.import_rate import _observations, write_json
from tests.support import CMEM, make_worker_env

_TIMES = re.compile(r"; ([0-9.]+) s \(([0-9.]+) s in git\)")


def _cmem(env: dict[str, str], *args: str) -> tuple[float, float, float, str]:
    """(wall, sync, git) seconds and the output of one `cmem` call."""
    started = time.perf_counter()
    done = subprocess.run(
        [CMEM, *args], env=env, capture_output=True, text=True, timeout=3600, check=False
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"cmem {' '.join(args)}: {done.stdout}\n{done.stderr}")
    found = _TIMES.search(done.stdout)
    sync, in_git = (float(found.group(1)), float(found.group(2))) if found else (0.0, 0.0)
    return wall, sync, in_git, done.stdout


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def run(*, out: Any, options: dict[str, Any]) -> None:
    size = options.get("size") or (1_000 if options.get("quick") else 10_000)
    with scratch_dir("cmem-bench-sync-") as work:
        remote = work / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
        envs = {}
        for name in ("a", "b"):
            data = work / name
            data.mkdir(mode=0o700)
            (work / f"home-{name}").mkdir()
            envs[name] = make_worker_env(
                data, 9, HOME=str(work / f"home-{name}"), CMEM_NO_SPAWN="1"
            )
            cmem_migrate(envs[name])
        a, b = envs["a"], envs["b"]
        seed = work / "seed.json"
        write_json(_observations(size, seed=7), seed)
        subprocess.run([CMEM, "import", "json", str(seed)], env=a, check=True, capture_output=True)
        rows = []
        rows.append(("first push (A)", *_cmem(a, "sync", "--remote", str(remote))[:3]))
        rows.append(("first pull (B, empty)", *_cmem(b, "sync", "--remote", str(remote))[:3]))
        loose = _size(remote)
        more = work / "more.json"
        extra = _observations(10, seed=8)
        now = datetime.now(UTC)
        for row in extra:
            # New rows of a new session, made now: sync sends rows changed since the
            # last sync by their time (an import of old history would keep its old times).
            row["title"] = f"incremental {row['title']}"
            row["session"] = 1_000_000
            row["created"] = now
        write_json(extra, more)
        subprocess.run([CMEM, "import", "json", str(more)], env=a, check=True, capture_output=True)
        rows.append(("10 new rows: push (A)", *_cmem(a, "sync")[:3]))
        rows.append(("10 new rows: pull (B)", *_cmem(b, "sync")[:3]))
        rows.append(("nothing new (B)", *_cmem(b, "sync")[:3]))
        subprocess.run(["git", "--git-dir", str(remote), "gc", "-q"], check=True)
        packed = _size(remote)
        files = subprocess.run(
            ["git", "--git-dir", str(remote), "ls-tree", "-r", "--name-only", "main"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.count("\n")
    out.write(f"{size:,} observations, {files:,} files in the remote (local bare repository)")
    out.write(f"{'step':<24} {'wall s':>8} {'sync s':>8} {'git s':>8}")
    for label, wall, sync, in_git in rows:
        out.write(f"{label:<24} {wall:>8.2f} {sync:>8.2f} {in_git:>8.2f}")
    per_k = 1000 / size
    out.write(
        f"remote size: {loose / 1e6:.1f} MB loose ({loose * per_k / 1e6:.2f} MB per 1,000 "
        f"observations), {packed / 1e6:.1f} MB after git gc ({packed * per_k / 1e6:.2f} MB per 1,000)"
    )
