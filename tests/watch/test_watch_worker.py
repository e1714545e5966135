"""`cmem watch` against a real worker: what it posts is stored once through the hook API,
even when the watcher is killed with SIGKILL mid-way and started again; and the worker's
supervisor runs the watcher itself when CLAUDE_MEM_WATCH names an agent."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import query, wait_for
from tests.support import CMEM, LiveWorker, free_port, make_worker_env
from tests.watch.sessions import turn, write_session

pytestmark = pytest.mark.slow

TURNS = 40


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    project = tmp_path / "shop"
    project.mkdir()
    (project / "handlers.py").write_text("def handler():\n    return 1\n")
    return project


def worker_for(tmp_path: Path, **extra: str) -> LiveWorker:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    port = free_port()
    env = make_worker_env(
        data, port, HOME=str(home), CLAUDE_MEM_COMPRESSOR="offline", CMEM_NO_SPAWN="1", **extra
    )
    return LiveWorker(data_dir=data, port=port, env=env)


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[LiveWorker]:
    live = worker_for(tmp_path)
    live.start()
    yield live
    live.stop()


def stored(worker: LiveWorker) -> dict[str, int]:
    rows = query(worker, "SELECT kind, count(*) AS n FROM memory_event GROUP BY kind")
    out = {r["kind"]: r["n"] for r in rows}
    out["prompt"] = query(worker, "SELECT count(*) AS n FROM memory_prompt")[0]["n"]
    return out


def test_killed_with_sigkill_mid_way_then_restarted_stores_everything_once(
    worker: LiveWorker, shop: Path
) -> None:
    sessions = Path(worker.env["HOME"]) / ".continue" / "sessions"
    history = [item for n in range(TURNS) for item in turn(n, str(shop))]
    write_session(sessions, "long", str(shop), history)
    kills = 0
    for threshold in (10, 45, 90):  # three kills at different points of the same file
        proc = subprocess.Popen(
            [CMEM, "watch", "--once", "--agent", "continue"], env=worker.env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        got = wait_for(lambda t=threshold: sum(stored(worker).values()) >= t, timeout=60)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
        assert got
    assert kills >= 2, "the watcher finished before it could be killed: make the file longer"
    done = subprocess.run(
        [CMEM, "watch", "--once"], env=worker.env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert stored(worker) == {"observation": TURNS, "summary": TURNS, "prompt": TURNS}
    prompts = [r["text"] for r in query(worker, "SELECT text FROM memory_prompt ORDER BY id")]
    assert prompts == [f"prompt number {n}: read handlers.py" for n in range(TURNS)]
    again = subprocess.run(
        [CMEM, "watch", "--once"], env=worker.env, capture_output=True, text=True, timeout=120
    )
    assert "continue: 0 events from 0 new items" in again.stdout


def test_private_text_and_secrets_are_stripped_as_for_a_hook(
    worker: LiveWorker, shop: Path
) -> None:
    sessions = Path(worker.env["HOME"]) / ".continue" / "sessions"
    history = turn(1, str(shop))
    history[0]["message"]["content"] = "deploy with <private>hunter2-secret</private> please"
    history[1]["toolCallStates"][0]["output"][0]["content"] = (
        "token=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"
    )
    write_session(sessions, "priv", str(shop), history)
    done = subprocess.run(
        [CMEM, "watch", "--once", "--agent", "continue"], env=worker.env,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    prompt = query(worker, "SELECT text FROM memory_prompt")[0]["text"]
    assert "hunter2" not in prompt and "deploy with" in prompt
    payload = json.loads(
        query(worker, "SELECT payload FROM memory_event WHERE kind = 'observation'")[0]["payload"]
    )
    assert "ghp_0123456789" not in json.dumps(payload)


def test_once_with_no_worker_says_so_and_marks_nothing_read(tmp_path: Path, shop: Path) -> None:
    live = worker_for(tmp_path)  # not started; CMEM_NO_SPAWN keeps it that way
    sessions = Path(live.env["HOME"]) / ".continue" / "sessions"
    write_session(sessions, "s1", str(shop), turn(1, str(shop)))
    done = subprocess.run(
        [CMEM, "watch", "--once"], env={**live.env, "CLAUDE_MEM_WATCH": "continue"},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert "nothing was marked as read" in done.stderr
    state = live.data_dir / "watch" / "continue.json"
    assert not state.exists() or json.loads(state.read_text())["files"] == {}


def test_the_running_worker_follows_the_sessions_while_watching_is_on(
    tmp_path: Path, shop: Path
) -> None:
    live = worker_for(tmp_path)
    live.start()
    sessions = Path(live.env["HOME"]) / ".continue" / "sessions"
    try:
        # Installed while the worker runs: the supervisor starts the watcher by itself.
        on = subprocess.run(
            [CMEM, "install", "--continue"], env=live.env, capture_output=True, text=True,
            timeout=90,
        )  # fmt: skip
        assert "watching Continue's sessions" in on.stdout, on.stdout + on.stderr
        # Written after the install (one written before it is not taken in).
        write_session(sessions, "s1", str(shop), turn(1, str(shop)), age_s=0)
        started = time.monotonic()
        assert wait_for(
            lambda: stored(live) == {"observation": 1, "summary": 1, "prompt": 1}, timeout=30
        ), stored(live)
        print(f"captured by the worker's watcher in {time.monotonic() - started:.1f} s")
        observed = wait_for(lambda: query(live, "SELECT id FROM memory_observation"), timeout=45)
        assert observed, "the watched Read was not compressed"
        session = query(live, "SELECT platform, project FROM memory_session")[0]
        assert (session["platform"], session["project"]) == ("continue", "shop")
        # Uninstalled: the running watcher stops following, no restart needed.
        off = subprocess.run(
            [CMEM, "uninstall", "--continue"], env=live.env, capture_output=True, text=True,
            timeout=90,
        )  # fmt: skip
        assert "watching Continue's sessions turned off" in off.stdout, off.stdout + off.stderr
        write_session(sessions, "s2", str(shop), turn(2, str(shop)), age_s=0)
        time.sleep(3 * 2.0 + 1)  # three of the watcher's passes
        assert stored(live)["prompt"] == 1
    finally:
        live.stop()
    # The watcher went with the worker: no process of this data dir is left.
    marker = f"CLAUDE_MEM_DATA_DIR={live.data_dir}".encode()
    left = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if marker in (proc / "environ").read_bytes().split(b"\0"):
                left.append((proc / "cmdline").read_bytes().replace(b"\0", b" "))
        except OSError:
            continue
    assert left == []
