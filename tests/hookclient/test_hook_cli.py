"""The real `cmem hook` entry point against a real worker (and against none)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support import (
    CLAUDE_FIXTURES,
    CMEM,
    REPO,
    LiveWorker,
    free_port,
    make_worker_env,
    stop_detached_worker,
    token_mode_worker,
)
from tests.support.fake_socket import answering_once

EVENT_FOR_FIXTURE = {
    "SessionStart.json": "context",
    "UserPromptSubmit.json": "session-init",
    "PreToolUse.json": "file-context",
    "PostToolUse.json": "observation",
    "PostToolUse.bash.json": "observation",
    "PostToolUse.read_offset_limit.json": "observation",
    "PostToolUseFailure.json": "observation",
    "Stop.json": "summarize",
    "SessionEnd.json": "session-end",
    # Not an event cmem registers for; if it were routed to observation it must be a no-op.
    "PostToolBatch.json": "observation",
}


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveWorker]:
    """One real worker for the module: starting one costs seconds, the tests use distinct ids."""
    data = tmp_path_factory.mktemp("hook-cli") / "worker-data"
    data.mkdir(mode=0o700)
    port = free_port()
    live = LiveWorker(data_dir=data, port=port, env=make_worker_env(data, port))
    live.start()
    try:
        yield live
    finally:
        live.stop()


def _db_count(data_dir: Path, sql: str) -> int:
    con = sqlite3.connect(data_dir / "cmem.sqlite3", timeout=10)
    try:
        return int(con.execute(sql).fetchone()[0])
    finally:
        con.close()


def _observation(tool_use_id: str, session_id: str = "sess-cli", command: str = "echo hi") -> bytes:
    data = json.loads((CLAUDE_FIXTURES / "PostToolUse.bash.json").read_text())
    data.update(tool_use_id=tool_use_id, session_id=session_id)
    data["tool_input"]["command"] = command
    return json.dumps(data).encode()


@pytest.mark.slow
def test_every_fixture_through_the_real_entry_point_exits_0_with_valid_output(
    worker: LiveWorker,
) -> None:
    for name, event in EVENT_FOR_FIXTURE.items():
        result = worker.run_hook(event, (CLAUDE_FIXTURES / name).read_bytes())
        assert result.returncode == 0, (name, result.stderr)
        assert result.stderr == b"", (name, result.stderr)
        answer = json.loads(result.stdout)
        assert isinstance(answer, dict), name
        if "hookSpecificOutput" in answer:
            assert answer["hookSpecificOutput"]["hookEventName"] in {
                "SessionStart",
                "PreToolUse",
                "UserPromptSubmit",
                "PostToolUse",
            }
    fixture_sessions = "select id from memory_session where session_id not like 'sess-%'"
    assert (
        _db_count(
            worker.data_dir,
            f"select count(*) from memory_prompt where session_id in ({fixture_sessions})",
        )
        == 1
    )
    # The four PostToolUse* fixtures come from four sessions (same tool_use_id): four events.
    assert (
        _db_count(
            worker.data_dir,
            f"select count(*) from memory_event where kind='observation' and session_id in ({fixture_sessions})",
        )
        == 4
    )
    assert (
        _db_count(
            worker.data_dir,
            f"select count(*) from memory_event where kind='summary' and session_id in ({fixture_sessions})",
        )
        == 1
    )
    # Delivered again, nothing new: tool uses by tool_use_id, the summary by its prompt id.
    for name, event in EVENT_FOR_FIXTURE.items():
        if event in {"observation", "summarize"}:
            assert worker.run_hook(event, (CLAUDE_FIXTURES / name).read_bytes()).returncode == 0
    assert (
        _db_count(
            worker.data_dir,
            f"select count(*) from memory_event where session_id in ({fixture_sessions})",
        )
        == 5
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"{nope",
        b"[1, 2]",
        b"\xff\xfe\x00binary\x80\x81",
        b"x" * (5 * 1024 * 1024),
        b"y" * (9 * 1024 * 1024),
    ],
    ids=["empty", "malformed", "not-an-object", "binary", "5MB-garbage", "9MB-over-the-limit"],
)
def test_bad_inputs_exit_0_with_nothing_on_stdout_and_one_stderr_line(
    worker: LiveWorker, payload: bytes
) -> None:
    result = worker.run_hook("observation", payload)
    assert result.returncode == 0
    assert result.stdout == b""
    lines = result.stderr.decode().splitlines()
    assert (
        len(lines) == 1
        and lines[0].startswith("cmem: ")
        and lines[0].endswith("continuing without memory")
    )


@pytest.mark.slow
def test_a_5mb_tool_output_is_stored_capped_and_binary_bytes_survive(worker: LiveWorker) -> None:
    data = json.loads(_observation("toolu_big"))
    data["tool_response"]["stdout"] = "A" * (5 * 1024 * 1024)
    body = json.dumps(data).encode()
    result = worker.run_hook("observation", body)
    assert result.returncode == 0 and result.stdout == b"{}", result.stderr
    raw = _observation("toolu_bin").replace(b"echo hi", b"echo \xff\xfe caf\xc3\xa9")
    result = worker.run_hook("observation", raw)
    assert result.returncode == 0 and result.stdout == b"{}", result.stderr
    con = sqlite3.connect(worker.data_dir / "cmem.sqlite3")
    payload = json.loads(
        con.execute("select payload from memory_event where tool_use_id='toolu_big'").fetchone()[0]
    )
    stdout = payload["tool_response"]["stdout"]
    assert len(stdout) < 20000 and "characters cut" in stdout
    command = json.loads(
        con.execute("select payload from memory_event where tool_use_id='toolu_bin'").fetchone()[0]
    )["tool_input"]["command"]
    assert command.endswith("café") and "\ufffd" in command


@pytest.mark.slow
def test_an_oversized_request_is_shrunk_by_the_client_not_lost(worker: LiveWorker) -> None:
    data = json.loads(_observation("toolu_huge"))
    data["tool_response"]["stdout"] = "B" * (9 * 1024 * 1024)
    result = worker.run_hook("observation", json.dumps(data).encode())
    assert result.returncode == 0 and result.stdout == b"{}", result.stderr
    assert (
        _db_count(
            worker.data_dir, "select count(*) from memory_event where tool_use_id='toolu_huge'"
        )
        == 1
    )


@pytest.mark.slow
def test_eight_processes_times_25_events_store_exactly_200_and_a_replay_stores_nothing(
    worker: LiveWorker,
) -> None:
    payloads = [
        _observation(f"toolu_c{p}_{i}", session_id=f"sess-c{p}")
        for p in range(8)
        for i in range(25)
    ]

    def send_all(proc: int) -> list[int]:
        # One process per batch of 25 events, 8 of them at once: `cmem hook` is one process per event,
        # so each worker thread runs its 25 hooks back to back.
        codes = []
        for body in payloads[proc * 25 : (proc + 1) * 25]:
            codes.append(worker.run_hook("observation", body, timeout=30).returncode)
        return codes

    for _ in range(2):
        with ThreadPoolExecutor(8) as pool:
            codes = [c for batch in pool.map(send_all, range(8)) for c in batch]
        assert codes == [0] * 200
        assert (
            _db_count(
                worker.data_dir,
                "select count(*) from memory_event where tool_use_id like 'toolu_c%'",
            )
            == 200
        )
    assert not list((worker.data_dir / "spool").glob("*.hook"))


def test_the_hook_client_imports_nothing_heavy() -> None:
    code = (
        "import sys; import cmem_site.cli, memory.hookclient.client; "
        "heavy = [m for m in sys.modules if m.split('.')[0] in {'django', 'anthropic', 'huey', 'ninja', 'pydantic', "
        "'json', 'http', 'urllib', 'socket', 'subprocess'}]; print(','.join(heavy))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert result.stdout.strip() == ""


def test_a_local_hook_run_loads_no_json_django_or_other_project_module(tmp_path: Path) -> None:
    """The whole fast path, not only the import: settings.json as cmem writes it, one
    observation POSTed to a (fake) local worker, the answer printed."""
    data = tmp_path / "data"
    data.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env["CLAUDE_MEM_DATA_DIR"] = str(data)
    subprocess.run(
        [sys.executable, "-c", "from memory import config; config.ensure_settings_file()"],
        env=env,
        cwd=REPO,
        check=True,
    )
    assert json.loads((data / "settings.json").read_text())["CLAUDE_MEM_HOOK_TIMEOUT_MS"]
    code = (
        "import sys; from memory.hookclient import client as hookclient; "
        "sys.stdin = open(sys.argv[1]); code = hookclient.main(['claude-code', 'observation']); "
        "mods = sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'memory', 'cmem_site', 'django', 'json', 're', 'http', 'socket', 'pathlib'}); "
        "sys.stderr.write(f'{code} ' + ','.join(mods))"
    )
    payload = tmp_path / "payload.json"
    payload.write_bytes(_observation("toolu_fast_path"))
    # The hook talks to the worker's Unix socket in the data dir (memory/runtime/credentials.py).
    with answering_once(data / "worker.sock") as requests:
        result = subprocess.run(
            [sys.executable, "-c", code, str(payload)],
            env=env,
            cwd=REPO,
            capture_output=True,
            timeout=20,
        )
    server_ok = requests and requests[0].startswith(b"POST /api/hooks/claude-code/observation ")
    assert server_ok, requests
    assert result.stdout == b"{}"
    status, _, modules = result.stderr.decode().partition(" ")
    assert status == "0"
    assert modules.split(",") == [
        "memory",
        "memory.hookclient",
        "memory.hookclient.client",
        "memory.protocol",
        "memory.protocol.settings_file",
    ]


def test_the_installed_entry_with_data_dir_reaches_that_worker_without_importing_os(
    tmp_path: Path,
) -> None:
    """The hook line `cmem install` writes for a custom data dir (`-I -S`, the entry,
    `--data-dir DIR`): the event goes to DIR's socket, and `os` is never imported (-X
    importtime lists every module the process loads), though the variable is set for
    anything that imports `os` later (a spawned worker, the spool)."""
    from memory.agents.install.claude_code import hook_entry_argv

    data = tmp_path / "custom-data"
    data.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env["HOME"] = str(tmp_path / "home")  # the default data dir would be elsewhere
    python, *flags, code = hook_entry_argv()  # python -I -S -c CODE
    argv = [python, "-X", "importtime", *flags, code, "hook", "claude-code", "observation"]
    with answering_once(data / "worker.sock") as requests:
        result = subprocess.run(
            [*argv, "--data-dir", str(data)],
            input=_observation("toolu_data_dir"),
            env=env,
            capture_output=True,
            timeout=20,
        )
    assert requests and requests[0].startswith(b"POST /api/hooks/claude-code/observation "), (
        result.stderr[-2000:]
    )
    assert result.returncode == 0 and result.stdout == b"{}"
    imported = [
        line.rsplit("|", 1)[1].strip()
        for line in result.stderr.decode().splitlines()
        if line.startswith("import time:") and "|" in line
    ]
    assert "memory.hookclient.client" in imported
    assert "os" not in imported
    # What `os.environ` would read if the spool or a worker start imported it after.
    after = subprocess.run(
        [python, *flags,
         code.replace(";run()", "")
         + f";import memory.hookclient.entry as e;e._hook_options(['x','--data-dir',{str(data)!r}]);"
         "import os,sys;sys.stdout.write(os.environ['CLAUDE_MEM_DATA_DIR'])"],
        env=env, capture_output=True, text=True, timeout=20, check=True,
    )  # fmt: skip
    assert after.stdout == str(data)


@pytest.mark.slow
def test_worker_stopped_an_observation_spools_fast_and_is_stored_once_after_start(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    port = free_port()
    env = make_worker_env(data, port)
    # A worker that is not running: no port file; the hook must spool and start one.
    started = time.monotonic()
    result = subprocess.run(
        [CMEM, "hook", "claude-code", "observation"],
        input=_observation("toolu_spooled"),
        env=env,
        capture_output=True,
        timeout=10,
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 0 and result.stdout == b""
    assert b"saved to the spool" in result.stderr
    assert elapsed < 0.8, elapsed
    try:
        # The hook started the worker detached; it ingests the spool when its consumer starts.
        deadline = time.monotonic() + 60
        stored = 0
        while time.monotonic() < deadline:
            if (data / "cmem.sqlite3").exists():
                try:
                    stored = _db_count(
                        data, "select count(*) from memory_event where tool_use_id='toolu_spooled'"
                    )
                except sqlite3.OperationalError:
                    stored = 0
                if stored:
                    break
            time.sleep(0.2)
        assert stored == 1
        # The consumer can ingest the spool before the server has answered its first health
        # check; wait until the worker announces its port so the retry goes over HTTP.
        while time.monotonic() < deadline and not (data / "worker.port").exists():
            time.sleep(0.1)
        # Delivered again live (a retry of the same tool use): still exactly one row.
        again = subprocess.run(
            [CMEM, "hook", "claude-code", "observation"],
            input=_observation("toolu_spooled"),
            env=env,
            capture_output=True,
            timeout=10,
        )
        assert again.returncode == 0 and again.stdout == b"{}", again.stderr
        assert (
            _db_count(data, "select count(*) from memory_event where tool_use_id='toolu_spooled'")
            == 1
        )
        assert not list((data / "spool").glob("*.hook"))
    finally:
        stop_detached_worker(env)


@pytest.mark.slow
def test_context_hook_with_no_worker_degrades_within_the_bound(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    env = make_worker_env(data, free_port(), CLAUDE_MEM_HOOK_TIMEOUT_MS="500")
    # A stale spawn lock (fresh mtime) stands for "another hook is starting it": no spawn here.
    (data / "worker.spawn.lock").write_text("1 0\n")
    started = time.monotonic()
    result = subprocess.run(
        [CMEM, "hook", "claude-code", "file-context"],
        input=(CLAUDE_FIXTURES / "PreToolUse.json").read_bytes(),
        env=env,
        capture_output=True,
        timeout=10,
    )
    assert result.returncode == 0 and result.stdout == b""
    assert time.monotonic() - started < 1.5
    assert (
        result.stderr.decode().startswith("cmem: ")
        and b"continuing without memory" in result.stderr
    )
    assert not (data / "spool").exists()


def test_settings_are_read_env_first_then_the_file_without_json(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.hookclient import client as hookclient

    (data_dir / "settings.json").write_text(
        json.dumps(
            {
                "CLAUDE_MEM_HOOK_TIMEOUT_MS": "750",
                "CLAUDE_MEM_WORKER_URL": "",
                "CLAUDE_MEM_API_TOKEN": 'a"b',
            },
            indent=2,
        )
    )
    hookclient.forget_settings()
    assert hookclient.timeout_s() == 0.75
    assert hookclient.setting("CLAUDE_MEM_WORKER_URL") == ""
    assert hookclient.setting("CLAUDE_MEM_API_TOKEN") == 'a"b'  # escaped: parsed for real
    monkeypatch.setenv("CLAUDE_MEM_HOOK_TIMEOUT_MS", "1500")
    assert hookclient.timeout_s() == 1.5
    hookclient.forget_settings()


def test_team_mode_payload_carries_file_facts_and_the_project(tmp_path: Path) -> None:
    from memory.hookclient import remote as hookclient_remote

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = git@github.com:acme/widgets.git\n'
    )
    target = repo / "a.py"
    target.write_text("print(1)\n")
    body = json.dumps(
        {
            "session_id": "s",
            "cwd": str(repo),
            "tool_name": "Read",
            "tool_input": {"file_path": str(target)},
        }
    ).encode()
    sent = json.loads(hookclient_remote.remote_payload("file-context", body))
    facts = sent["cmem_file_facts"][str(target)]
    assert facts["size"] == 9 and len(facts["sha256"]) == 64
    assert sent["cmem_project"]["name"] == "github.com/acme/widgets"


def test_remote_payload_names_the_sessions_model_from_the_clients_transcript(
    tmp_path: Path,
) -> None:
    """The shared worker cannot read the client's transcript: at Stop and SessionEnd the
    client reads its tail and sends the model, so team sessions are priced at it."""
    from memory.hookclient import remote as hookclient_remote

    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        json.dumps({"type": "user", "message": {"content": "hi"}})
        + "\n"
        + json.dumps({"type": "assistant", "message": {"model": "claude-sonnet-5-5"}})
        + "\n"
    )
    body = {"session_id": "s", "cwd": str(tmp_path), "transcript_path": str(transcript)}
    for event in ("summarize", "session-end"):
        sent = json.loads(hookclient_remote.remote_payload(event, json.dumps(body).encode()))
        assert sent["cmem_model"] == "claude-sonnet-5-5"
    # Other events do not pay for the read; a transcript naming no model sends nothing.
    sent = json.loads(hookclient_remote.remote_payload("observation", json.dumps(body).encode()))
    assert "cmem_model" not in sent
    transcript.write_text("not json\n")
    sent = json.loads(hookclient_remote.remote_payload("summarize", json.dumps(body).encode()))
    assert "cmem_model" not in sent


@pytest.fixture
def team_worker(tmp_path: Path) -> Iterator[tuple[LiveWorker, str]]:
    with token_mode_worker(tmp_path / "team-worker-data") as worker:
        yield worker


@pytest.mark.slow
def test_team_mode_client_talks_http_to_the_worker_url_and_drains_its_spool(
    team_worker: tuple[LiveWorker, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.hookclient import client as hookclient

    worker, token = team_worker
    client_data = tmp_path / "client-data"
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(client_data))
    # Spooled while the shared worker was unreachable.
    hookclient.spool_write(
        "claude-code", "observation", _observation("toolu_team_spooled", session_id="sess-team")
    )
    env = {k: v for k, v in worker.env.items() if k != "CLAUDE_MEM_DATA_DIR"}
    env.update(
        CLAUDE_MEM_DATA_DIR=str(client_data),
        CLAUDE_MEM_WORKER_URL=worker.url,
        CLAUDE_MEM_API_TOKEN=token,
    )
    result = subprocess.run(
        [CMEM, "hook", "claude-code", "observation"],
        input=_observation("toolu_team", session_id="sess-team"),
        env=env,
        capture_output=True,
        timeout=10,
    )
    assert result.returncode == 0 and result.stdout == b"{}", result.stderr
    count = "select count(*) from memory_event where tool_use_id in ('toolu_team', 'toolu_team_spooled')"
    assert _db_count(worker.data_dir, count) == 2
    assert not list((client_data / "spool").glob("*.hook"))


def test_the_observers_own_claude_session_is_never_observed(tmp_path: Path) -> None:
    """The `claude` provider marks its CLI with CLAUDE_MEM_INTERNAL=1 (claude-mem's marker):
    every hook of that process exits 0 at once, sends nothing, spools nothing, starts nothing."""
    data = tmp_path / "data"
    data.mkdir()
    env = {**make_worker_env(data, free_port()), "CLAUDE_MEM_INTERNAL": "1"}
    for event in ("context", "session-init", "observation", "file-context", "summarize"):
        result = subprocess.run(
            [CMEM, "hook", "claude-code", event],
            input=_observation(f"toolu_internal_{event}"),
            env=env,
            capture_output=True,
            timeout=10,
        )
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
    assert sorted(p.name for p in data.rglob("*")) == []  # no spool, no port file, no worker
