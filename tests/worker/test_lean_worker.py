"""Issue 19: the lean start (schema stamp), the static CSP header, the -I -S hook entry."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client, override_settings

from memory.worker import schema_stamp
from tests.support import CMEM, free_port, make_worker_env
from tests.support.fake_socket import answering_once

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_schema_stamp_matches_only_the_same_database_file_and_migrations(tmp_path: Path) -> None:
    db = tmp_path / "x.sqlite3"
    database = {"ENGINE": "django.db.backends.sqlite3", "NAME": db}
    assert schema_stamp.current_stamp(database) is None  # no file yet: always migrate
    db.write_bytes(b"")
    assert not schema_stamp.is_current(database)
    schema_stamp.record(database)
    assert schema_stamp.is_current(database)
    # A replaced database file (new inode) migrates again.
    db.rename(tmp_path / "old.sqlite3")
    db.write_bytes(b"")
    assert not schema_stamp.is_current(database)
    # PostgreSQL is shared: never skipped, and recording clears a stale stamp.
    schema_stamp.record(database)
    pg = {"ENGINE": "django.db.backends.postgresql", "NAME": "cmem"}
    assert schema_stamp.current_stamp(pg) is None
    schema_stamp.record(pg)
    assert not schema_stamp.stamp_path().exists()


@pytest.mark.django_db
def test_the_cached_csp_header_is_the_one_django_csp_builds() -> None:
    client = Client(HTTP_HOST="127.0.0.1")
    first = client.get("/api/health")["Content-Security-Policy"]
    second = client.get("/api/health")["Content-Security-Policy"]
    assert "default-src 'self'" in first
    assert "frame-ancestors 'none'" in first
    assert second == first
    policy = {
        "DIRECTIVES": {**settings.CONTENT_SECURITY_POLICY["DIRECTIVES"], "img-src": ["'self'"]}
    }
    with override_settings(CONTENT_SECURITY_POLICY=policy):
        changed = client.get("/api/health")["Content-Security-Policy"]
    assert "data:" not in changed and "img-src 'self'" in changed
    assert client.get("/api/health")["Content-Security-Policy"] == first


def test_the_isolated_hook_entry_posts_to_the_worker_and_exits_0(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env["CLAUDE_MEM_DATA_DIR"] = str(data)
    # The hook talks to the owner's worker over its Unix socket only (SECURITY.md §1).
    with answering_once(data / "worker.sock") as requests:
        result = subprocess.run(
            [
                sys.executable,
                "-I",
                "-S",
                str(REPO / "memory" / "hookclient" / "entry.py"),
                "hook",
                "claude-code",
                "observation",
            ],
            input=b'{"session_id": "s", "tool_name": "Bash"}',
            env=env,
            cwd=tmp_path,  # not the repo: the entry finds the package itself
            capture_output=True,
            timeout=20,
        )
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"{}"
    assert requests and requests[0].startswith(b"POST /api/hooks/claude-code/observation ")


def test_the_fast_start_reads_the_database_django_uses(tmp_path: Path) -> None:
    """memory/worker/fast_start.py checks the stamp without Django: its database must be
    the one cmem_site/settings.py configures (a fresh process: the test run's own settings
    point at the test database)."""
    code = (
        "import cmem_site.settings as s; from memory.worker import schema_stamp; "
        "d, l = s.DATABASES['default'], schema_stamp.local_database(); "
        "print(d['ENGINE'] == l['ENGINE'], str(d['NAME']) == str(l['NAME']))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env["CLAUDE_MEM_DATA_DIR"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True,
        timeout=60, check=True,
    )  # fmt: skip
    assert result.stdout.split() == ["True", "True"]


def _wait(predicate, timeout: float = 60.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _serve_once(env: dict[str, str], data: Path) -> tuple[list[str], float]:
    """`cmem serve` until it answers; (the supervisor's argv, seconds to the first answer)."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [CMEM, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert _wait(lambda: (data / "worker.port").exists()), "the worker did not start"
        elapsed = time.monotonic() - started
        argv = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
        assert int((data / "worker.pid").read_text()) == proc.pid
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: the serving process too
            proc.wait()
            raise
    assert not (data / "worker.pid").exists() and not (data / "worker.sock").exists()
    return [a.decode() for a in argv if a], elapsed


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads /proc")
def test_serve_skips_django_when_the_schema_is_unchanged(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    env = make_worker_env(data, free_port())
    # First start: no stamp, so the Django command migrates, then re-executes itself as
    # the supervisor (the argv says so).
    first, _ = _serve_once(env, data)
    assert first[-2:] == ["serve", "--supervise"]
    assert schema_stamp.STAMP_NAME in os.listdir(data)
    # Unchanged schema: the supervisor runs in the very process `cmem serve` started, with
    # no Django and no second interpreter.
    second, _ = _serve_once(env, data)
    assert second[-1] == "serve"
    # A changed stamp (a new migration, another Django) goes through Django's migrate again.
    (data / schema_stamp.STAMP_NAME).write_text("something else\n")
    third, _ = _serve_once(env, data)
    assert third[-2:] == ["serve", "--supervise"]


def test_the_serving_process_imports_no_heavy_sdk_at_start(tmp_path: Path) -> None:
    """The worker's idle memory and cold start (issue 19): what loads at start is Django,
    ninja and the app; the SDKs and models load on first use. (deliverables.mcp_tools once
    imported mcp at every start: 1.4 s and ~19 MB.)"""
    code = (
        "import sys; sys.modules['redis'] = None; import django; django.setup(); "
        "import cmem_site.wsgi, cmem_site.urls, memory.worker.inprocess_consumer; "
        "heavy = {'mcp', 'anthropic', 'openai', 'tree_sitter', 'detect_secrets', 'numpy', "
        "'onnxruntime', 'httpx', 'starlette', 'jsonschema', 'rich'}; "
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in heavy)))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env.update(CLAUDE_MEM_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="cmem_site.settings")
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True,
        timeout=120, check=True,
    )  # fmt: skip
    assert result.stdout.strip() == ""


@pytest.mark.parametrize(
    ("raw", "home"),
    [("~/.claude-mem", "/home/u"), ("~", "/home/u/"), ("~/", "/"), ("/abs/dir", "/home/u"),
     ("rel/dir", "/home/u"), ("~/x", "")],
)  # fmt: skip
def test_the_hook_clients_data_dir_is_what_expanduser_makes(
    raw: str, home: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.hookclient import client as hookclient

    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", raw)
    monkeypatch.setenv("HOME", home)
    assert hookclient.data_dir() == os.path.expanduser(raw)


@contextlib.contextmanager
def _one_answer_worker(data: Path) -> Iterator[None]:
    """A stand-in worker on `data`'s socket that answers one request with `{}` at once, so a
    hook's own cost is what is left."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(data / "worker.sock"))
    server.listen(1)

    def answer() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join(5)
        server.close()


def test_the_isolated_hook_path_imports_no_os_module(tmp_path: Path) -> None:
    """Under `-I -S` nothing imports `os` before the hook does, and its module body is 1.2 ms
    of a 10 ms start: the local fast path (settings.json, the socket) runs on `posix`."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "settings.json").write_text('{\n  "CLAUDE_MEM_HOOK_TIMEOUT_MS": "3000"\n}\n')
    code = (
        f"import sys; sys.path.insert(0, {str(REPO)!r}); from memory.hookclient import client as hookclient; "
        "code = hookclient.main(['claude-code', 'observation']); "
        "sys.stderr.write(f\"{code} {'os' in sys.modules} {hookclient.timeout_s()}\")"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env["CLAUDE_MEM_DATA_DIR"] = str(data)
    with _one_answer_worker(data):
        result = subprocess.run(
            [sys.executable, "-I", "-S", "-c", code], input=b'{"session_id": "s"}', env=env,
            capture_output=True, timeout=20,
        )  # fmt: skip
    assert result.stdout == b"{}"
    assert result.stderr.decode() == "0 False 3.0"


def test_the_entry_records_the_plugin_route_without_a_data_dir_option(tmp_path: Path) -> None:
    """`--route plugin` alone (the plugin's SessionStart hook): the route file is written in
    the environment's data dir, and the context is printed as the worker sent it."""
    from memory.agents.install.claude_code import hook_entry_argv

    data = tmp_path / "data"
    data.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env["CLAUDE_MEM_DATA_DIR"] = str(data)
    with _one_answer_worker(data):
        result = subprocess.run(
            [*hook_entry_argv(), "hook", "claude-code", "context", "--route", "plugin"],
            input=b'{"session_id": "s", "cwd": "/tmp"}', env=env, capture_output=True,
            timeout=30,
        )  # fmt: skip
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    assert result.stdout == b"{}"
    assert (data / "install-route").read_text().strip() == "plugin"
