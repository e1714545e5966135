"""The spool: files the hook client writes, ingested in order and exactly once."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from memory.hookclient import client as hookclient
from memory.hooks import spool
from memory.models import Event, Prompt
from tests.support import CLAUDE_FIXTURES

pytestmark = pytest.mark.django_db


def _body(name: str, **changes: Any) -> bytes:
    data = json.loads((CLAUDE_FIXTURES / name).read_text())
    data.update(changes)
    return json.dumps(data).encode()


def test_spool_files_are_written_atomically_with_sortable_names(data_dir: Path) -> None:
    names = [hookclient.spool_write("claude-code", "observation", b"{}") for _ in range(3)]
    assert names == sorted(names)
    folder = data_dir / "spool"
    assert sorted(p.name for p in folder.iterdir()) == names  # no temp files left behind
    assert oct(os.stat(folder / names[0]).st_mode & 0o777) == "0o600"
    assert spool.spool_backlog() == 3


def test_ingest_replays_in_order_exactly_once() -> None:
    hookclient.spool_write(
        "claude-code", "session-init", _body("UserPromptSubmit.json", prompt="one")
    )
    for i in range(3):
        hookclient.spool_write(
            "claude-code",
            "observation",
            _body(
                "PostToolUse.bash.json",
                session_id="571a3c56-e5f8-4a93-b71d-946a0601887f",
                tool_use_id=f"t{i}",
            ),
        )
    hookclient.spool_write(
        "claude-code", "session-init", _body("UserPromptSubmit.json", prompt="two")
    )
    report = spool.spool_ingest()
    assert (report.ingested, report.failed, report.left) == (5, 0, 0)
    assert list(Prompt.objects.order_by("number").values_list("text", flat=True)) == ["one", "two"]
    assert list(Event.objects.order_by("pk").values_list("tool_use_id", "prompt_number")) == [
        ("t0", 1),
        ("t1", 1),
        ("t2", 1),
    ]
    assert spool.spool_ingest().ingested == 0
    assert spool.spool_backlog() == 0


def test_a_replay_of_an_already_stored_event_stores_nothing_new() -> None:
    body = _body("PostToolUse.bash.json")
    hookclient.spool_write("claude-code", "observation", body)
    hookclient.spool_write("claude-code", "observation", body)
    hookclient.spool_write("claude-code", "session-init", _body("UserPromptSubmit.json"))
    hookclient.spool_write(
        "claude-code", "session-init", _body("UserPromptSubmit.json")
    )  # timed out, then spooled
    assert spool.spool_ingest().ingested == 4
    assert Event.objects.count() == 1 and Prompt.objects.count() == 1


def test_a_refused_file_moves_to_failed_and_does_not_block_the_rest(data_dir: Path) -> None:
    hookclient.spool_write("claude-code", "observation", b"{not json")
    hookclient.spool_write("claude-code", "observation", _body("PostToolUse.bash.json"))
    report = spool.spool_ingest()
    assert (report.ingested, report.failed) == (1, 1)
    assert len(list((data_dir / "spool" / "failed").iterdir())) == 1
    assert Event.objects.count() == 1


def test_a_file_claimed_by_a_dead_ingester_is_taken_back(data_dir: Path) -> None:
    name = hookclient.spool_write("claude-code", "observation", _body("PostToolUse.bash.json"))
    claimed = data_dir / "spool" / "claimed"
    claimed.mkdir()
    os.rename(data_dir / "spool" / name, claimed / name)
    assert spool.spool_ingest().ingested == 0  # a live claim is left alone
    old = time.time() - spool.CLAIM_STALE_S - 5
    os.utime(claimed / name, (old, old))
    assert spool.spool_ingest().ingested == 1
    assert Event.objects.count() == 1


def test_a_hook_request_drains_the_spool(
    client: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from memory.hooks import tasks

    hookclient.spool_write(
        "claude-code", "observation", _body("PostToolUse.bash.json", tool_use_id="from-spool")
    )
    tasks._last_kick[0] = 0.0
    resp = client.post(
        "/api/hooks/claude-code/observation",
        data=_body("PostToolUse.json"),
        content_type="application/json",
    )
    assert resp.status_code == 200
    assert set(Event.objects.values_list("tool_use_id", flat=True)) == {
        "from-spool",
        "toolu_fake_0002",
    }


def test_the_spawn_lock_lets_one_hook_of_a_crowd_start_the_worker(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spawned = []
    monkeypatch.setattr(hookclient.os, "fork", lambda: spawned.append(1) or 1)
    assert [hookclient.spawn_worker() for _ in range(5)] == [True, False, False, False, False]
    lock = data_dir / "worker.spawn.lock"
    old = time.time() - hookclient.SPAWN_LOCK_STALE_S - 1
    os.utime(lock, (old, old))
    assert hookclient.spawn_worker() is True
    assert len(spawned) == 2


def test_a_spooled_event_holds_no_secret_and_no_private_text(data_dir: Path) -> None:
    import subprocess

    from tests.support import CMEM, make_worker_env

    secret = "sk-ant-api03-Zq8Wm3Tr6Yp1Nd4Kc7Vb2Hx5Lg9Js0FeUa8Qo3Mi6Rt1Ws4Pk7Xc2Bn5Vz9AA"
    (data_dir / "worker.spawn.lock").write_text("0 0\n")  # "another hook is starting it": no spawn
    env = make_worker_env(data_dir, 1)
    prompt = _body("UserPromptSubmit.json", prompt="<private>my bank PIN 4242</private>")
    output = _body("PostToolUse.bash.json", tool_response={"stdout": f"ANTHROPIC_API_KEY={secret}"})
    for event, body in (("session-init", prompt), ("observation", output)):
        result = subprocess.run(
            [CMEM, "hook", "claude-code", event],
            input=body,
            env=env,
            capture_output=True,
            timeout=30,
        )
        assert result.returncode == 0 and b"saved to the spool" in result.stderr
    spooled = b"".join(p.read_bytes() for p in (data_dir / "spool").glob("*.hook"))
    assert secret.encode() not in spooled and b"4242" not in spooled
    spool.spool_ingest()
    # The entirely private prompt still counts as private after the round trip through the spool.
    assert not Prompt.objects.exists()
    assert secret not in json.dumps(list(Event.objects.values_list("payload", flat=True)))
