"""Issue 19: the lean start (schema stamp), the static CSP header, the -I -S hook entry."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client, override_settings

from memory.service import schema_stamp

REPO = Path(__file__).resolve().parents[1]


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
    # The hook talks to the owner's worker over its Unix socket only (SECURITY.md §1).
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(data / "worker.sock"))
    server.listen(1)
    requests: list[bytes] = []

    def answer() -> None:
        conn, _ = server.accept()
        with conn:
            requests.append(conn.recv(65536))
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env["CLAUDE_MEM_DATA_DIR"] = str(data)
    result = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            str(REPO / "memory" / "hook_entry.py"),
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
    thread.join(5)
    server.close()
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"{}"
    assert requests and requests[0].startswith(b"POST /api/hooks/claude-code/observation ")
