"""The serving process's HTTP layer (issue 19): granian's worker on TCP and the owner's Unix
socket, its WSGI environ, streaming, a stop that lets requests finish; waitress as fallback."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory.worker import granian_serving
from memory.worker.server import OWNER_SOCKET_ENVIRON, owner_socket_app, tcp_app
from tests.support import CMEM, free_port, make_worker_env

CANARY = "sk-ant-canary-not-in-any-request"


def _echo(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """Says what the request's environ holds; /slow sleeps first; /stream streams."""
    path = environ["PATH_INFO"]
    if path == "/slow":
        time.sleep(0.6)
    if path == "/stream":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return iter([b"one ", b"two ", b"three"])  # type: ignore[return-value]
    body = json.dumps({
        "owner": bool(environ.get(OWNER_SOCKET_ENVIRON)),
        "canary": any(CANARY in str(value) for value in environ.values()),
        "method": environ["REQUEST_METHOD"], "path": path, "query": environ.get("QUERY_STRING"),
        "body": environ["wsgi.input"].read().decode(),
    }).encode()  # fmt: skip
    start_response(
        "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    )
    return [body]


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path) -> None:
        super().__init__("127.0.0.1", timeout=10)
        self.unix_path = str(path)

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(self.unix_path)


@pytest.fixture
def listeners(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[int, Path, Any]]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)
    port, sock = free_port(), tmp_path / "w.sock"
    served = granian_serving.start_listeners(
        [(tcp_app(_echo), ("127.0.0.1", port)), (owner_socket_app(_echo), sock)], threads=2
    )
    try:
        yield port, sock, served
    finally:
        served.stop(timeout=2)


def _ask(conn: http.client.HTTPConnection, method: str, path: str, body: bytes = b"") -> Any:
    conn.request(method, path, body=body or None)
    resp = conn.getresponse()
    data = resp.read()
    assert resp.status == 200, data
    return json.loads(data) if resp.getheader("Content-Type") == "application/json" else data


def test_each_listener_marks_its_own_requests_and_none_sees_the_environment(
    listeners: tuple[int, Path, Any],
) -> None:
    port, sock, _ = listeners
    tcp = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    # Keep-alive: several requests on one connection, a body, a query string.
    for n in range(3):
        answer = _ask(tcp, "POST", f"/api/x?n={n}", b'{"a": 1}')
        assert answer == {"owner": False, "canary": False, "method": "POST", "path": "/api/x",
                          "query": f"n={n}", "body": '{"a": 1}'}  # fmt: skip
    # A client cannot claim the owner's mark over TCP.
    tcp.request("GET", "/", headers={"cmem.owner_socket": "1", "X-Cmem-Owner-Socket": "1"})
    assert json.loads(tcp.getresponse().read())["owner"] is False
    assert _ask(_UnixConnection(sock), "GET", "/")["owner"] is True
    assert oct(sock.stat().st_mode & 0o777) == "0o600"


def test_a_streaming_answer_arrives_whole(listeners: tuple[int, Path, Any]) -> None:
    port, _, _ = listeners
    assert _ask(http.client.HTTPConnection("127.0.0.1", port, timeout=10), "GET", "/stream") == (
        b"one two three"
    )


def test_stop_lets_a_running_request_finish(listeners: tuple[int, Path, Any]) -> None:
    port, _, served = listeners
    answers: list[Any] = []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    asking = threading.Thread(target=lambda: answers.append(_ask(conn, "GET", "/slow")))
    asking.start()
    time.sleep(0.2)  # the request is inside the app
    served.stop(timeout=5)
    asking.join(10)
    assert answers and answers[0]["path"] == "/slow"
    with pytest.raises(OSError):
        probe = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        probe.request("GET", "/")
        probe.getresponse()


def test_a_taken_port_fails_at_start_not_in_a_thread(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(Exception, match=r"(?i)address|in use|bind"):
            granian_serving.start_listeners([(_echo, ("127.0.0.1", taken.getsockname()[1]))], 1)


def _served_by(env: dict[str, str], data: Path) -> str:
    """Start `cmem serve`, ask /api/health over TCP, stop; the answer's Server header."""
    proc = subprocess.Popen(
        [CMEM, "serve"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (data / "worker.port").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        port = int((data / "worker.port").read_text().split()[-1])  # "host port"
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/api/health")
        resp = conn.getresponse()
        assert resp.status == 200 and json.loads(resp.read())["status"] == "ok"
        return resp.getheader("Server") or ""
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: the serving process too
            proc.wait()
            raise
        assert not (data / "worker.sock").exists()


@pytest.mark.parametrize(("choice", "server"), [("", "granian"), ("waitress", "cmem")])
def test_the_worker_serves_with_granian_and_falls_back_to_waitress(
    tmp_path: Path, choice: str, server: str
) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    env = make_worker_env(data, free_port())
    env["CMEM_SERVER"] = choice
    assert _served_by(env, data) == server


def test_the_serving_process_starts_without_djangos_test_package_and_keeps_it_importable(
    tmp_path: Path,
) -> None:
    """django-ninja's `from django.test.signals import setting_changed` no longer pulls in
    the test client, unittest and jinja2 at the serving process's start; the signal is
    Django's own, and `django.test` still imports when something asks for it."""
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    code = (
        "import sys; from memory.worker import server; "
        "server._setting_changed_without_test_client(); "
        "import django; django.setup(); from django.core.signals import setting_changed; "
        "from ninja.conf import settings; server._warm_urls(); "
        "from django.test.signals import setting_changed as own_signal; "
        "early = sorted(m for m in ('django.test', 'jinja2', 'unittest') if m in sys.modules); "
        "same = own_signal is setting_changed; "
        "from django.test import Client; "
        "print(early, same, Client.__name__, 'ninja.conf' in sys.modules)"
    )
    env = make_worker_env(data, free_port())
    env["DJANGO_SETTINGS_MODULE"] = "cmem_site.settings"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["[]", "True", "Client", "True"]
