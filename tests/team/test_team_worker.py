"""Team mode with real processes: `cmem migrate` on PostgreSQL, a worker on PostgreSQL +
Redis behind tokens, remote hook clients, and consumers racing on one queue."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support import (
    CLAUDE_FIXTURES,
    CMEM,
    LiveWorker,
    free_port,
    make_worker_env,
    owner_headers,
)
from tests.support.team import MIGRATE_OUTPUT, pg_query, run_cmem

pytestmark = [pytest.mark.team, pytest.mark.slow]


def test_cmem_migrate_builds_the_configured_postgres_database(
    pg_server: str, pg_template: str, tmp_path: Path
) -> None:
    # The template every team test clones was made by `cmem migrate` with only the URL set.
    # `cmem migrate` writes each migration's "OK" as its own write: a line break may separate them.
    assert re.search(r"memory\.0003_postgres_search\.\.\.\s*OK", MIGRATE_OUTPUT[pg_template])
    url = f"{pg_server}/{pg_template}"
    columns = pg_query(
        url,
        "SELECT table_name FROM information_schema.columns WHERE column_name = 'search_vector' ORDER BY 1",
    )
    assert [c[0] for c in columns] == ["memory_observation", "memory_prompt", "memory_summary"]
    assert (
        pg_query(url, "SELECT count(*) FROM pg_indexes WHERE indexname LIKE %s", ("%search_gin",))[
            0
        ][0]
        == 3
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_MEM_", "CMEM_"))}
    env.update(CLAUDE_MEM_DATA_DIR=str(tmp_path / "d"), CLAUDE_MEM_DATABASE_URL=url)
    shown = run_cmem(["manage", "showmigrations", "memory", "deliverables"], env)
    assert shown.returncode == 0, shown.stderr
    assert "[X] 0003_postgres_search" in shown.stdout and "[ ]" not in shown.stdout
    # Nothing went to SQLite: the data dir has no database file.
    assert not (tmp_path / "d" / "cmem.sqlite3").exists()


def test_settings_switch_database_and_queue(team_env: dict[str, str]) -> None:
    code = (
        "from django.db import connection; from huey.contrib.djhuey import HUEY; "
        "print(connection.vendor, connection.settings_dict['NAME'], type(HUEY).__name__, HUEY.name)"
    )
    result = run_cmem(["manage", "shell", "-c", code], team_env)
    assert result.returncode == 0, result.stderr
    vendor, name, huey_class, queue = result.stdout.strip().splitlines()[-1].split()
    assert (vendor, huey_class, queue) == (
        "postgresql",
        "PriorityRedisHuey",
        team_env["CMEM_HUEY_NAME"],
    )
    assert name == team_env["CLAUDE_MEM_DATABASE_URL"].rsplit("/", 1)[1]


def _hook(
    worker: LiveWorker, event: str, body: bytes, **env: str
) -> subprocess.CompletedProcess[bytes]:
    hook_env = {
        k: v
        for k, v in worker.env.items()
        if k not in {"CLAUDE_MEM_DATABASE_URL", "CLAUDE_MEM_QUEUE_URL"}
    }
    hook_env.update(CLAUDE_MEM_WORKER_URL=worker.url, **env)
    return subprocess.run(
        [CMEM, "hook", "claude-code", event],
        input=body,
        env=hook_env,
        capture_output=True,
        timeout=20,
    )


def test_remote_hooks_need_a_valid_token(
    team_worker: LiveWorker, team_env: dict[str, str], tmp_path: Path
) -> None:
    url = team_env["CLAUDE_MEM_DATABASE_URL"]
    made = run_cmem(["token", "create", "alice", "--name", "laptop"], team_env)
    assert made.returncode == 0, made.stderr
    raw = made.stdout.strip()
    prompt = (CLAUDE_FIXTURES / "UserPromptSubmit.json").read_bytes()

    def stored() -> int:
        return pg_query(
            url,
            "SELECT (SELECT count(*) FROM memory_session) + (SELECT count(*) FROM memory_prompt)",
        )[0][0]

    missing = _hook(team_worker, "session-init", prompt, CLAUDE_MEM_API_TOKEN="")
    wrong = _hook(team_worker, "session-init", prompt, CLAUDE_MEM_API_TOKEN="cmem_" + "w" * 43)
    assert missing.returncode == wrong.returncode == 0  # the agent is never blocked
    assert b"401" in missing.stderr or b"token" in missing.stderr
    assert stored() == 0

    ok = _hook(team_worker, "session-init", prompt, CLAUDE_MEM_API_TOKEN=raw)
    assert ok.returncode == 0, ok.stderr
    assert stored() == 2

    # Teammates' clones, in folders of different names, are one project on the shared worker.
    for folder, remote in [
        ("alice/app", "git@github.com:acme/app.git"),
        ("bob/acme-app", "https://github.com/acme/app"),
    ]:
        clone = tmp_path / folder
        (clone / ".git").mkdir(parents=True)
        (clone / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {remote}\n')
        body = dict(json.loads(prompt), cwd=str(clone), session_id=f"clone-{folder}")
        assert (
            _hook(
                team_worker, "session-init", json.dumps(body).encode(), CLAUDE_MEM_API_TOKEN=raw
            ).returncode
            == 0
        )
    projects = pg_query(url, "SELECT project FROM memory_session WHERE session_id LIKE 'clone-%%'")
    assert [p[0] for p in projects] == ["github.com/acme/app", "github.com/acme/app"]
    before = stored()

    assert run_cmem(["token", "revoke", raw[:12]], team_env).returncode == 0
    again = json.loads(prompt)
    again["prompt"] = "a second prompt"
    _hook(team_worker, "session-init", json.dumps(again).encode(), CLAUDE_MEM_API_TOKEN=raw)
    assert stored() == before
    last_used = pg_query(url, "SELECT last_used FROM memory_apitoken")[0][0]
    assert last_used is not None


def test_a_remote_clients_project_claim_names_the_session(
    team_worker: LiveWorker, team_env: dict[str, str]
) -> None:
    raw = run_cmem(["token", "create", "bob"], team_env).stdout.strip()
    body = json.loads((CLAUDE_FIXTURES / "UserPromptSubmit.json").read_bytes())
    body["cmem_project"] = {"name": "github.com/acme/demo", "root": body["cwd"]}
    req = urllib.request.Request(
        f"{team_worker.url}/api/hooks/claude-code/session-init",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {raw}"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert resp.status == 200
    rows = pg_query(
        team_env["CLAUDE_MEM_DATABASE_URL"], "SELECT project, project_root FROM memory_session"
    )
    assert rows == [("github.com/acme/demo", body["cwd"])]
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(urllib.request.Request(f"{team_worker.url}/api/stats"), timeout=10)
    assert refused.value.code == 401


def _post(url: str, event: str, body: dict[str, object], data_dir: Path) -> None:
    req = urllib.request.Request(
        f"{url}/api/hooks/claude-code/{event}",
        data=json.dumps(body).encode(),
        # A loopback worker without tokens answers only its owner (memory/access/owner_auth.py).
        headers={"Content-Type": "application/json", **owner_headers(data_dir)},
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.status == 200


def test_two_consumers_on_one_queue_compress_each_event_once(
    tmp_path: Path, team_env: dict[str, str]
) -> None:
    """A worker (server + consumer) and a second `run_huey` share Redis and PostgreSQL; every
    hook enqueues its session, so both consumers chase the same sessions' events."""
    data = Path(team_env["CLAUDE_MEM_DATA_DIR"])
    port = free_port()
    env = make_worker_env(data, port)
    env.update({k: v for k, v in team_env.items() if k.startswith(("CLAUDE_MEM_", "CMEM_"))})
    env.update(CLAUDE_MEM_WORKER_PORT=str(port), CLAUDE_MEM_BATCH_SIZE="3")
    worker = LiveWorker(data_dir=data, port=port, env=env)
    worker.start(timeout=60)
    with open(tmp_path / "consumer2.out", "ab") as log:
        second = subprocess.Popen(
            [CMEM, "manage", "run_huey", "--workers", "2"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        sessions, per_session = 4, 12
        project = tmp_path / "proj"
        project.mkdir()

        def client(n: int) -> None:
            sid = f"race-{n}"
            _post(
                worker.url,
                "session-init",
                {
                    "session_id": sid,
                    "cwd": str(project),
                    "hook_event_name": "UserPromptSubmit",
                    "prompt": "go",
                },
                worker.data_dir,
            )
            for i in range(per_session):
                _post(
                    worker.url,
                    "observation",
                    {
                        "session_id": sid,
                        "cwd": str(project),
                        "hook_event_name": "PostToolUse",
                        "tool_name": "Bash",
                        "tool_use_id": f"toolu_{n}_{i}",
                        "tool_input": {"command": f"echo step {n} {i}"},
                        "tool_response": {
                            "stdout": f"step {n} {i}",
                            "stderr": "",
                            "interrupted": False,
                        },
                    },
                    worker.data_dir,
                )

        threads = [threading.Thread(target=client, args=(n,)) for n in range(sessions)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        url = team_env["CLAUDE_MEM_DATABASE_URL"]
        total = sessions * per_session
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            waiting = pg_query(
                url, "SELECT count(*) FROM memory_event WHERE status IN ('pending', 'claimed')"
            )[0][0]
            if waiting == 0:
                break
            time.sleep(0.3)
        events = pg_query(
            url,
            "SELECT status, attempts, count(*) FROM memory_event WHERE kind = 'observation' GROUP BY 1, 2",
        )
        assert events == [("done", 1, total)], events
        # Each event was compressed once: one observation per tool use, none twice.
        per_event = pg_query(
            url, "SELECT count(*), count(DISTINCT (session_id, title)) FROM memory_observation"
        )[0]
        assert per_event == (total, total)
        assert second.poll() is None, "the second consumer died"
    finally:
        second.terminate()
        try:
            second.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(second.pid, 9)
        worker.stop()
