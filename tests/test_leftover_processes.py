"""A test stops what it starts: a run that leaves a process behind fails, naming it and the
test that started it (tests/conftest.py, tests/support/processes.py), then kills it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO


@pytest.mark.slow
def test_a_process_a_test_leaves_running_fails_the_run_and_is_named(tmp_path: Path) -> None:
    marker = f"cmem-leftover-{os.getpid()}"
    (tmp_path / "test_leaves_one.py").write_text(
        "import subprocess\n\n"
        "def test_starts_and_forgets():\n"
        f"    subprocess.Popen(['sh', '-c', 'sleep 300 # {marker}'], start_new_session=True)\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(REPO / "pyproject.toml"), "-p", "tests.conftest",
         "-q", "-p", "no:randomly", str(tmp_path / "test_leaves_one.py")],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 passed" in run.stdout and "processes the tests left running" in run.stdout
    assert f"sleep 300 # {marker} (started by " in run.stdout
    assert "::test_starts_and_forgets (call))" in run.stdout
    # ...and it is not left running.
    assert subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 1
