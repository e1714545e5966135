"""`cmem embeddings backfill` killed with SIGKILL mid-run resumes where it stopped."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

# Six batches of 256 and a part: enough to be killed mid-run, few enough for the
# transformer (about 60 rows a second here) to finish the rest quickly.
ROWS = 1500
SEED = f"""
import os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cmem_site.settings")
import django
django.setup()
from memory.models import Observation, Session
s = Session.objects.create(session_id="kill9", project="demo")
words = "refund checkout redis pool backup archive camera permission webhook retry".split()
Observation.objects.bulk_create(
    [Observation(session=s, project="demo", title=f"row {{i}} " + words[i % 10],
                 narrative=" ".join(words[(i + j) % 10] for j in range(40)))
     for i in range({ROWS})], batch_size=2000)
"""


def _env(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_MEM_", "CMEM_"))}
    env["CLAUDE_MEM_DATA_DIR"] = str(data)
    return env


def _counts(db: Path) -> tuple[int, int]:
    with sqlite3.connect(db, timeout=30) as conn:
        total, distinct = conn.execute(
            "SELECT count(*), count(DISTINCT object_id) FROM memory_embedding WHERE kind = 'observation'"
        ).fetchone()
    return int(total), int(distinct)


def test_backfill_resumes_after_kill_9(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    env = _env(data)
    cli = [sys.executable, "-m", "cmem_site.cli"]
    subprocess.run([*cli, "migrate", "-v", "0"], env=env, check=True, timeout=300)
    subprocess.run([sys.executable, "-c", SEED], env=env, check=True, timeout=300)
    db = data / "cmem.sqlite3"
    proc = subprocess.Popen([*cli, "embeddings", "backfill", "--no-progress"], env=env)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and _counts(db)[0] < 256 and proc.poll() is None:
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    partial, _ = _counts(db)
    assert 0 < partial < ROWS, partial  # killed mid-run, with whole batches committed
    assert partial % 256 == 0
    done = subprocess.run(
        [*cli, "embeddings", "backfill", "--no-progress"], env=env, check=True, timeout=600,
        capture_output=True, text=True,
    )  # fmt: skip
    assert f"embedded {ROWS - partial} row(s)" in done.stdout
    assert _counts(db) == (ROWS, ROWS)
