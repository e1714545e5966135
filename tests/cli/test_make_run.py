"""What `make run` runs, `cmem serve --ensure-admin`: one Django start that migrates a fresh
data dir, creates the local admin login, then serves; run again, it names the running worker."""

from __future__ import annotations

import re
import subprocess
import time
import urllib.error
import urllib.request
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
        # The worker answers health a moment before its supervisor, polling, sees it and
        # prints the link and the next steps: wait for the last line of what it says.
        deadline = time.monotonic() + 60
        while "Next steps:" not in (said := (data / "serve.out").read_text()):
            assert time.monotonic() < deadline, said
            time.sleep(0.05)
        assert f"Created the admin login for http://127.0.0.1:{port}/admin/: user admin" in said
        assert (data / "admin-password").stat().st_mode & 0o777 == 0o600
        again = subprocess.run(
            [CMEM, "serve", "--ensure-admin"], env=worker.env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert again.returncode == 0 and "is already running" in again.stdout, again.stderr
        # Every dashboard URL printed logs in (a bare URL answers 403): the first run's and
        # the second's, each a one-time link.
        for text in (said, again.stdout):
            (link,) = re.findall(r"http://127\.0\.0\.1:\d+/auth/\?token=\S+", text)
            assert _status(link) == 200, text
        # ... and the first run says what to do next, naming a cmem that exists.
        assert "Next steps:" in said and " setup " in said and " demo " in said, said
        named = re.search(r"^  (\S+) setup ", said, flags=re.M)
        assert named and (named.group(1) == "cmem" or Path(named.group(1)).exists()), said
    finally:
        worker.stop()


def _status(url: str) -> int:
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
    try:
        with opener.open(url, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
