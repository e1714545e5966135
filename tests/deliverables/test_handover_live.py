"""Issue 20 through the real `cmem hook` and a real worker (`cmem serve`, over its socket).

- a `work_state_write` PostToolUse attaches the file to the request's card on My Work;
- hostile attach paths attach nothing, and the hook still answers at once;
- a Stop while the worker is down is spooled with its deliverables' bytes: the file is
  deleted (as a worktree would be), the worker comes back, and the deliverable is there;
- team mode: the bytes travel from the client to the remote worker, which reads no path.
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import CMEM, LiveWorker, free_port, make_worker_env, owner_open

pytestmark = pytest.mark.slow

ATTACH = "mcp__cmem__work_state_write"


def _rows(data_dir: Path, sql: str = "") -> list[sqlite3.Row]:
    db = sqlite3.connect(f"file:{data_dir / 'cmem.sqlite3'}?mode=ro", uri=True, timeout=10)
    db.row_factory = sqlite3.Row
    try:
        return db.execute(
            sql
            or "SELECT original_path, stored_path, attached, title, note, prompt_id "
            "FROM deliverables_deliverable ORDER BY id"
        ).fetchall()
    finally:
        db.close()


def _hook(
    env: dict[str, str], event: str, payload: dict[str, Any]
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [CMEM, "hook", "claude-code", event],
        input=json.dumps(payload).encode(),
        env=env,
        capture_output=True,
        timeout=20,
    )


def _prompt(env: dict[str, str], cwd: Path, sid: str, text: str) -> None:
    done = _hook(
        env,
        "session-init",
        {"session_id": sid, "cwd": str(cwd), "hook_event_name": "UserPromptSubmit", "prompt": text},
    )
    assert done.returncode == 0, done.stderr


def _attach(
    env: dict[str, str], cwd: Path, sid: str, paths: list[str], **extra: str
) -> subprocess.CompletedProcess[bytes]:
    return _hook(
        env,
        "observation",
        {
            "session_id": sid,
            "cwd": str(cwd),
            "hook_event_name": "PostToolUse",
            "tool_name": ATTACH,
            "tool_input": {"paths": paths, **extra},
            "tool_response": [{"type": "text", "text": "1 file(s) will be attached"}],
            "tool_use_id": f"tu-{time.monotonic_ns()}",
        },
    )


def _transcript(folder: Path, written: Path) -> Path:
    lines = [
        {"type": "user", "message": {"role": "user", "content": "write the notes"}},
        {
            "type": "assistant",
            "message": {
                "content": [
                    {
                        "type": "tool_use",
                        "id": "tu-w",
                        "name": "Write",
                        "input": {"file_path": str(written), "content": "x"},
                    }
                ]
            },
        },
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "tu-w"}]}},
    ]
    path = folder / "transcript.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def _stop(cwd: Path, sid: str, transcript: Path) -> dict[str, Any]:
    return {
        "session_id": sid,
        "cwd": str(cwd),
        "hook_event_name": "Stop",
        "transcript_path": str(transcript),
        "stop_hook_active": False,
        "last_assistant_message": "Wrote the notes.",
    }


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    project, outside = tmp_path / "shop", tmp_path / "worktree-tmp"
    (project / ".git").mkdir(parents=True)
    outside.mkdir()
    return project, outside


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[LiveWorker]:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    port = free_port()
    live = LiveWorker(data_dir=data, port=port, env=make_worker_env(data, port, HOME=str(tmp_path)))
    live.start()
    try:
        yield live
    finally:
        live.stop()


def test_an_attached_file_appears_on_my_work_marked_attached(
    worker: LiveWorker, tree: tuple[Path, Path]
) -> None:
    project, outside = tree
    _prompt(worker.env, project, "live-1", "draft the launch slides")
    slides = outside / "slides.html"
    slides.write_text("<h1>Launch</h1>\n")
    done = _attach(worker.env, project, "live-1", [str(slides)], title="Launch deck", note="v1")
    assert done.returncode == 0 and done.stdout == b"{}", done.stderr
    slides.unlink()  # the hook read the bytes at the call; the file can go
    [row] = _rows(worker.data_dir)
    assert row["attached"] == 1 and row["title"] == "Launch deck" and row["note"] == "v1"
    assert row["prompt_id"] is not None
    stored = worker.data_dir / "deliverables" / row["stored_path"]
    assert stored.read_text() == "<h1>Launch</h1>\n"
    page = owner_open(worker.data_dir, worker.url + "/work/").decode()
    card = page[page.index("draft the launch slides") :]
    assert "slides.html" in card and ">attached</span>" in card and "Launch deck" in card


def test_hostile_attach_paths_attach_nothing_and_the_hook_answers_at_once(
    worker: LiveWorker, tree: tuple[Path, Path], tmp_path: Path
) -> None:
    project, outside = tree
    ssh = tmp_path / ".ssh"  # the worker's and the hook's HOME is tmp_path
    ssh.mkdir()
    (ssh / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n")
    (outside / "report.md").symlink_to(ssh / "id_rsa")
    os.mkfifo(outside / "pipe.txt")
    huge = outside / "huge.bin"
    with huge.open("wb") as fh:
        fh.truncate(21_000_000)  # over CLAUDE_MEM_DELIVERABLES_MAX_BYTES (20 MB)
    _prompt(worker.env, project, "live-2", "attach things")
    started = time.monotonic()
    done = _attach(
        worker.env,
        project,
        "live-2",
        [
            str(outside / "report.md"),
            "/proc/self/environ",
            str(ssh / "id_rsa"),
            str(outside / "pipe.txt"),
            str(huge),
        ],
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0 and done.stdout == b"{}", done.stderr
    assert elapsed < 3.0, elapsed
    assert _rows(worker.data_dir) == []
    assert not (worker.data_dir / "deliverables").exists() or not [
        p for p in (worker.data_dir / "deliverables").rglob("*") if p.is_file()
    ]


def test_a_stop_with_the_worker_down_yields_its_deliverables_after_it_comes_back(
    tmp_path: Path, tree: tuple[Path, Path]
) -> None:
    project, outside = tree
    data = tmp_path / "data-down"
    data.mkdir(mode=0o700)
    port = free_port()
    env = make_worker_env(data, port, HOME=str(tmp_path))
    # A fresh spawn lock: the hooks must not start a worker of their own here, so the file is
    # surely gone before any worker runs (the test starts it below).
    (data / "worker.spawn.lock").write_text("0 0\n")
    notes = outside / "NOTES.md"
    key = "sk-ant-api03-" + "Z9y8X7w6V5u4T3s2" * 6
    notes.write_text(f"# Notes\n\nAll done.\nkey: {key}\n")
    _prompt(env, project, "down-1", "write the notes")
    started = time.monotonic()
    done = _hook(env, "summarize", _stop(project, "down-1", _transcript(tmp_path, notes)))
    elapsed = time.monotonic() - started
    assert done.returncode == 0 and b"saved to the spool" in done.stderr, done.stderr
    assert elapsed < 3.0, elapsed
    [spooled] = [p for p in (data / "spool").iterdir() if p.name.endswith("summarize.hook")]
    entry = json.loads(spooled.read_bytes())["cmem_handover"]["files"][0]
    assert entry["path"] == str(notes)
    carried = base64.b64decode(entry["data"]).decode()
    assert "All done." in carried and key not in carried  # the spool holds no secret
    assert key.encode() not in spooled.read_bytes()
    notes.unlink()
    outside.rmdir()  # the worktree or temp folder is gone
    (data / "worker.spawn.lock").unlink()
    live = LiveWorker(data_dir=data, port=port, env=env)
    live.start()
    try:
        deadline = time.monotonic() + 30
        rows: list[sqlite3.Row] = []
        while time.monotonic() < deadline and not rows:
            rows = _rows(data)
            time.sleep(0.2)
        [row] = rows
        assert row["original_path"] == str(notes) and row["attached"] == 0
        assert row["prompt_id"] is not None
        stored = (data / "deliverables" / row["stored_path"]).read_text()
        assert "All done." in stored and key not in stored
    finally:
        live.stop()


@pytest.fixture
def team_worker(tmp_path: Path) -> Iterator[tuple[LiveWorker, str]]:
    """A worker in token mode (a team's shared server) and a user token for it."""
    data = tmp_path / "team-data"
    data.mkdir(mode=0o700)
    port = free_port()
    env = make_worker_env(data, port, CLAUDE_MEM_REQUIRE_TOKEN="true")
    live = LiveWorker(data_dir=data, port=port, env=env)
    live.start()
    try:
        subprocess.run(
            [
                CMEM,
                "manage",
                "shell",
                "-c",
                "from django.contrib.auth.models import User; User.objects.create_user('alice')",
            ],
            env=env,
            check=True,
            capture_output=True,
            timeout=60,
        )
        made = subprocess.run(
            [CMEM, "token", "create", "alice"],
            env=env,
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        )
        yield live, made.stdout.strip().splitlines()[-1]
    finally:
        live.stop()


def test_team_mode_the_bytes_travel_from_the_client(
    team_worker: tuple[LiveWorker, str], tmp_path: Path, tree: tuple[Path, Path]
) -> None:
    worker, token = team_worker
    project, outside = tree
    env = {k: v for k, v in worker.env.items() if k != "CLAUDE_MEM_DATA_DIR"}
    env.update(
        CLAUDE_MEM_DATA_DIR=str(tmp_path / "client-data"),
        CLAUDE_MEM_WORKER_URL=worker.url,
        CLAUDE_MEM_API_TOKEN=token,
    )
    _prompt(env, project, "team-1", "chart the latency")
    chart = outside / "latency.svg"
    chart.write_text('<svg xmlns="http://www.w3.org/2000/svg"><rect/></svg>\n')
    done = _attach(env, project, "team-1", [str(chart)], title="p99 latency")
    assert done.returncode == 0 and done.stdout == b"{}", done.stderr
    notes = outside / "NOTES.md"
    notes.write_text("# Latency notes\n")
    done = _hook(env, "summarize", _stop(project, "team-1", _transcript(tmp_path, notes)))
    assert done.returncode == 0 and done.stdout == b"{}", done.stderr
    rows = {Path(r["original_path"]).name: r for r in _rows(worker.data_dir)}
    assert set(rows) == {"latency.svg", "NOTES.md"}
    assert rows["latency.svg"]["attached"] == 1 and rows["latency.svg"]["title"] == "p99 latency"
    assert rows["NOTES.md"]["attached"] == 0
    stored = worker.data_dir / "deliverables" / rows["NOTES.md"]["stored_path"]
    assert stored.read_text() == "# Latency notes\n"
