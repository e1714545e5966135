"""kill -9 of the web server (gunicorn) in the middle of ingest and of the huey consumer in the
middle of compression, on a real `cmem serve` fed by real hook clients: after the supervisor
restarts them, every captured event is stored once and compressed once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.fakes.anthropic import FakeAnthropic, Reply
from tests.reliability.helpers import (
    Session,
    api_settings,
    children,
    echo_observations,
    health_ok,
    hook,
    integrity,
    kill9_group,
    new_worker,
    rows,
    scalar,
    spooled,
    wait_for,
)

pytestmark = pytest.mark.slow


def test_kill9_of_server_and_consumer_stores_and_compresses_every_event_once(
    tmp_path: Path,
) -> None:
    fake = FakeAnthropic(default=Reply(fn=echo_observations)).start()
    # The first compression request is held far past the kill: the consumer dies mid-request.
    fake.script(Reply(fn=lambda body: echo_observations(body, delay=120)))
    worker = new_worker(
        tmp_path,
        **api_settings(
            fake.url,
            CLAUDE_MEM_BATCH_SIZE="3",
            CLAUDE_MEM_CLAIM_TIMEOUT_SECONDS="1",
            CLAUDE_MEM_API_TIMEOUT_MS="300000",
            CLAUDE_MEM_HOOK_TIMEOUT_MS="5000",
        ),
    )
    session = Session(tmp_path)
    db = worker.data_dir / "cmem.sqlite3"
    sent: list[int] = []
    warnings: list[str] = []

    def send(n: int) -> None:
        result, _ = hook(worker.env, "observation", session.bash(n))
        assert result.returncode == 0, result.stderr
        warnings.append(result.stderr.decode())
        sent.append(n)

    try:
        worker.start()  # inside: the fake API stops even if the worker does not start
        assert hook(worker.env, "session-init", session.prompt("run the steps"))[0].returncode == 0
        for n in range(3):
            send(n)
        # 1. The consumer is mid-compression (the held request), past the claim timeout: kill -9.
        assert fake.wait_for_requests(1, timeout=60), (worker.data_dir / "serve.out").read_text()[
            -2000:
        ]
        assert scalar(db, "select count(*) from memory_event where status='claimed'") >= 1
        time.sleep(1.2)
        consumer = children(worker.data_dir)["consumer"]
        kill9_group(consumer)
        wait_for(
            lambda: children(worker.data_dir)["consumer"] != consumer, 30, "the consumer restart"
        )

        # 2. Hooks keep coming, one after another, while the web server is killed and restarted.
        server = children(worker.data_dir)["server"]
        restarted = threading.Event()

        def keep_sending() -> None:
            n, after = 3, 0
            while after < 3:  # until three hooks after the restart was seen
                send(n)
                n += 1
                after += restarted.is_set()

        burst = threading.Thread(target=keep_sending)
        burst.start()
        wait_for(lambda: len(sent) >= 5, 60, "the burst to start", interval=0.02)
        kill9_group(server)
        wait_for(
            lambda: children(worker.data_dir)["server"] != server and health_ok(worker),
            60,
            "the server restart",
        )
        restarted.set()
        burst.join(timeout=120)
        assert not burst.is_alive()
        # Some hooks of the burst met the dead server and spooled their event.
        assert any("saved to the spool" in w for w in warnings), warnings
        total = len(sent)
        expected = {f"toolu_rel_{n:04d}" for n in range(total)}
        wait_for(
            lambda: (
                scalar(db, "select count(*) from memory_event where status='done'") == total
                and not spooled(worker.data_dir)
            ),
            120,
            "every event stored and compressed",
        )
        stored = [
            r[0] for r in rows(db, "select tool_use_id from memory_event where kind='observation'")
        ]
        assert sorted(stored) == sorted(expected)  # each stored exactly once
        titles = sorted(r[0] for r in rows(db, "select title from memory_observation"))
        assert titles == sorted(
            f"obs of tool-{n}" for n in range(total)
        )  # each compressed exactly once
        # The killed request really was in flight, and its events were compressed again later.
        first = fake.requests[0].body["messages"][0]["content"]
        assert any(f"tool-{n}" in first for n in range(3))
        assert scalar(db, "select max(attempts) from memory_event") >= 2
        assert scalar(db, "select count(*) from memory_event where status!='done'") == 0
        assert integrity(db) == "ok"
    finally:
        worker.stop()
        fake.stop()
