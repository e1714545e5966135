"""What `make run` runs, `cmem serve --ensure-admin`: one Django start that migrates a fresh
data dir, creates the local admin login, then serves; run again, it names the running worker."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.paths import CMEM, REPO
from tests.support.worker import LiveWorker, free_port, make_worker_env


def test_make_run_is_one_serve_that_migrates_and_creates_the_admin(tmp_path: Path) -> None:
    make = (REPO / "Makefile").read_text()
    assert "\t$(VENV)/bin/cmem serve --ensure-admin\n" in make
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    port = free_port()
    worker = LiveWorker(
        data_dir=data, port=port, env=make_worker_env(data, port), serve_args=("--ensure-admin",)
    )
    worker.start(timeout=120)
    try:
        said = (data / "serve.out").read_text()
        assert f"Created the admin login for http://127.0.0.1:{port}/admin/: user admin" in said
        assert (data / "admin-password").stat().st_mode & 0o777 == 0o600
        again = subprocess.run(
            [CMEM, "serve", "--ensure-admin"], env=worker.env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert again.returncode == 0 and "is already running" in again.stdout, again.stderr
    finally:
        worker.stop()
