"""`CMEM_HOT_LANE=0` (memory/service/server.py `served_apps`): a real worker serves without
the hot lane (memory/api/hot_lane.py), and the installed hook works the same either way.

What shows who answered: the hot lane writes its answer's headers itself, Content-Type and
Content-Length first, then the ones Django's chain put on its probe answer; through Django's
chain, Content-Length is added by CommonMiddleware, after X-Frame-Options
(XFrameOptionsMiddleware, later in MIDDLEWARE, so earlier on the way out)."""

from __future__ import annotations

import http.client
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.agents.install.claude_code import hook_entry_argv
from tests.support import CLAUDE_FIXTURES, LiveWorker, free_port, make_worker_env, owner_headers

pytestmark = pytest.mark.slow


@pytest.fixture(params=["1", "0"], ids=["lane on", "lane off"])
def worker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[LiveWorker, str]]:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    port = free_port()
    live = LiveWorker(
        data_dir=data, port=port, env=make_worker_env(data, port, CMEM_HOT_LANE=request.param)
    )
    live.start()
    try:
        yield live, request.param
    finally:
        live.stop()


def _post(live: LiveWorker, path: str, body: bytes) -> tuple[int, list[str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=10)
    try:
        headers = {"Content-Type": "application/json", **owner_headers(live.data_dir)}
        conn.request("POST", path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, [name.lower() for name, _ in resp.getheaders()], resp.read()
    finally:
        conn.close()


def _get(live: LiveWorker, path: str) -> dict[str, int]:
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=10)
    try:
        conn.request("GET", path, headers=owner_headers(live.data_dir))
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def test_the_installed_hook_works_with_the_lane_on_and_off(
    worker: tuple[LiveWorker, str], tmp_path: Path
) -> None:
    live, lane = worker
    payload = json.loads((CLAUDE_FIXTURES / "UserPromptSubmit.json").read_text())
    payload["cwd"] = str(tmp_path)
    # The command line `cmem install` writes into Claude Code's settings.
    done = subprocess.run(
        [*hook_entry_argv(), "hook", "claude-code", "session-init"],
        input=json.dumps(payload).encode(),
        env=live.env,
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    stats = _get(live, "/api/stats")
    assert (stats["sessions"], stats["prompts"]) == (1, 1)

    observation = (CLAUDE_FIXTURES / "PostToolUse.json").read_bytes()
    status, headers, body = _post(live, "/api/hooks/claude-code/observation", observation)
    assert (status, json.loads(body)) == (200, {})
    for name in ("content-security-policy", "x-frame-options", "x-content-type-options"):
        assert name in headers
    if lane == "1":  # the lane's own answer
        assert headers[:2] == ["content-type", "content-length"]
    else:  # Django's chain answered
        assert headers.index("x-frame-options") < headers.index("content-length")
