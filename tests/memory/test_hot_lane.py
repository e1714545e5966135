"""Issue 19: the hot routes are answered beneath Django's handler (memory/api/hot_lane.py).

Each answer the lane gives must be the answer Django gives (status, body, headers), and
everything the lane is not sure of must reach Django: another caller, a foreign Host, a
browser's write, team mode, odd parameters, a failing read. The WSGI apps are called
directly here, as the server calls them (memory/service/server.py)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.core import signals
from django.db import close_old_connections
from django.test.client import RequestFactory

from cmem_site.wsgi import django_application
from memory.api import hot_lane
from memory.api.hot_lane import WRITTEN_FOR, HotLane
from memory.models import Event
from memory.service import credentials
from memory.service.credentials import OWNER_SOCKET_ENVIRON
from tests.factories import SessionFactory
from tests.memory.gate_helpers import fixture, gate_payload, make_obs, write_file
from tests.memory.retrieval_seed import seed

pytestmark = pytest.mark.django_db

HOST = "127.0.0.1:37777"


CONNECTION_CHECKS: list[str] = []


@pytest.fixture(autouse=True)
def _keep_the_test_transaction(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """What Django's test client does around a request: the connections' check would
    otherwise close the connection that holds the test's transaction. The lane's own call
    of it is counted instead."""
    CONNECTION_CHECKS.clear()
    monkeypatch.setattr(hot_lane, "close_old_connections", lambda: CONNECTION_CHECKS.append("x"))
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


class CountingApp:
    """Django's WSGI app, counting the requests that reached it."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        self.calls.append(environ["PATH_INFO"])
        return django_application(environ, start_response)


@pytest.fixture
def django_app() -> CountingApp:
    return CountingApp()


@pytest.fixture
def lane(django_app: CountingApp) -> HotLane:
    served = HotLane(django_app)
    served.headers()  # the header probe, so a test counts only its own requests
    django_app.calls.clear()
    return served


def environ(
    method: str,
    path: str,
    data: Any = None,
    *,
    owner: bool = True,
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> dict[str, Any]:
    factory = RequestFactory(**{OWNER_SOCKET_ENVIRON: owner}, HTTP_HOST=HOST)
    if method == "GET":
        request = factory.get(path, data, headers=headers)
    else:
        request = factory.post(
            path, data=body or b"", content_type="application/json", headers=headers
        )
    return request.environ


def call(
    app: Callable[..., Iterable[bytes]], env: dict[str, Any]
) -> tuple[str, dict[str, str], bytes]:
    got: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        got["status"], got["headers"] = status, headers

    result = app(env, start_response)
    try:
        body = b"".join(result)
    finally:
        close = getattr(result, "close", None)
        if close is not None:
            close()
    return got["status"], {name.lower(): value for name, value in got["headers"]}, body


def both(
    lane: HotLane, django_app: CountingApp, make: Callable[[], dict[str, Any]]
) -> tuple[Any, Any]:
    """The same request through the lane and through Django alone; asserts the lane
    answered it itself."""
    hot = call(lane, make())
    assert django_app.calls == [], "the lane passed the request on"
    return hot, call(django_application, make())


@pytest.fixture
def ids() -> dict[str, list[int]]:
    return seed()


def remembered_file(tmp_path: Path) -> tuple[Path, Path]:
    """A project with one file that an earlier session modified: (root, file)."""
    root = tmp_path / "proj"
    target = write_file(root, "src/worker.py")
    session = SessionFactory(root=root, session_id="s-old")
    when = datetime(2026, 4, 5, tzinfo=UTC)
    make_obs(session, "Fixed pooling", "src/worker.py", created=when, role="modified")
    return root, target


@pytest.mark.parametrize(
    "path,params",
    [
        ("/api/health", None),
        ("/api/search", {"q": "connection pool"}),
        ("/api/search", {"q": "checkout", "kind": "observation", "mode": "keyword", "limit": "5"}),
        ("/api/search", {"q": "", "project": "shop", "type": "bugfix,feature"}),
        ("/api/search", {"q": "pool", "since": "2026-01-01T00:00:00Z", "offset": "1"}),
    ],
)
def test_reads_are_answered_as_django_answers_them(lane, django_app, ids, path, params) -> None:
    hot, canonical = both(lane, django_app, lambda: environ("GET", path, params))
    assert hot[0] == canonical[0] == "200 OK"
    assert json.loads(hot[2]) == json.loads(canonical[2])
    assert hot[2] == canonical[2]
    assert hot[1] == canonical[1]
    # The headers Django's chain adds are there: nothing about security is skipped.
    for name in ("content-security-policy", "x-frame-options", "x-content-type-options"):
        assert name in hot[1]


def test_observations_by_id_and_a_file_s_observations(lane, django_app, ids, tmp_path) -> None:
    wanted = ",".join(str(pk) for pk in [*ids["observation"][:3], 999_999])
    hot, canonical = both(
        lane, django_app, lambda: environ("GET", "/api/observations", {"ids": wanted})
    )
    assert hot == canonical
    assert json.loads(hot[2])["missing"] == [999_999]

    root, target = remembered_file(tmp_path)
    for path in ("src/worker.py", str(target)):
        params = {"path": path, "project": "proj", "limit": "5"}
        hot, canonical = both(
            lane,
            django_app,
            lambda params=params: environ("GET", "/api/observations/by-file", params),
        )
        assert hot == canonical
        assert json.loads(hot[2])["total"] == 1


def test_the_owner_learns_the_pid_and_a_stranger_does_not(lane, django_app) -> None:
    for owner in (True, False):
        hot, canonical = both(
            lane, django_app, lambda owner=owner: environ("GET", "/api/health", owner=owner)
        )
        assert hot == canonical
        assert ("pid" in json.loads(hot[2])) is owner


def test_the_bearer_secret_proves_the_owner_over_tcp(lane, django_app, ids) -> None:
    secret = credentials.ensure_secret()
    auth = {"Authorization": f"Bearer {secret}"}
    make = lambda: environ("GET", "/api/search", {"q": "pool"}, owner=False, headers=auth)  # noqa: E731
    hot, canonical = both(lane, django_app, make)
    assert hot == canonical and hot[0] == "200 OK"


@pytest.mark.parametrize(
    "case",
    [
        "no credential",
        "wrong bearer",
        "a cookie",
        "foreign host",
        "bad ids",
        "limit out of range",
        "a name twice",
        "unknown name",
        "unknown kind",
        "not ascii",
        "by-file without project",
    ],
)
def test_what_the_lane_is_not_sure_of_reaches_django(lane, django_app, ids, case) -> None:
    path, params, owner, headers = "/api/search", {"q": "pool"}, True, {}
    raw_query = ""
    if case == "no credential":
        owner = False
    elif case == "wrong bearer":
        credentials.ensure_secret()
        owner, headers = False, {"Authorization": "Bearer not-the-secret"}
    elif case == "a cookie":
        owner, headers = False, {"Cookie": "sessionid=whatever"}
    elif case == "foreign host":
        headers = {"Host": "evil.example"}
    elif case == "bad ids":
        path, params = "/api/observations", {"ids": "1,abc"}
    elif case == "limit out of range":
        params = {"q": "pool", "limit": "0"}
    elif case == "a name twice":
        params, raw_query = None, "q=pool&q=cache"
    elif case == "unknown name":
        params = {"q": "pool", "colour": "blue"}
    elif case == "unknown kind":
        params = {"q": "pool", "kind": "gossip"}
    elif case == "not ascii":
        params, raw_query = None, "q=p\xc3\xb6ol"
    elif case == "by-file without project":
        path, params = "/api/observations/by-file", {"path": "src/a.py"}

    def make() -> dict[str, Any]:
        env = environ("GET", path, params, owner=owner, headers=headers)
        if raw_query:
            env["QUERY_STRING"] = raw_query
        return env

    passed_on = call(lane, make())
    assert django_app.calls == [path]
    assert passed_on == call(django_application, make())
    if case in ("no credential", "wrong bearer", "a cookie"):
        assert passed_on[0].startswith("401")
    if case == "foreign host":
        assert passed_on[0].startswith("400")


def test_team_mode_goes_through_django(lane, django_app, ids, monkeypatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_REQUIRE_TOKEN", "true")
    status, _, body = call(lane, environ("GET", "/api/search", {"q": "pool"}))
    assert django_app.calls == ["/api/search"]
    assert status.startswith("401") and b"missing API token" in body


def _observation_payload(tool_use_id: str) -> bytes:
    payload = fixture("PostToolUse.json")
    payload.update(session_id="hot-lane-session", tool_use_id=tool_use_id)
    return json.dumps(payload).encode()


def test_a_hook_is_stored_and_answered_as_django_answers_it(lane, django_app) -> None:
    path = "/api/hooks/claude-code/observation"
    hot = call(lane, environ("POST", path, body=_observation_payload("toolu_hot")))
    assert django_app.calls == []
    canonical = call(
        django_application, environ("POST", path, body=_observation_payload("toolu_django"))
    )
    assert hot == canonical and hot[0] == "200 OK"
    assert Event.objects.filter(session__session_id="hot-lane-session").count() == 2


def test_the_gate_decision_through_the_lane(lane, django_app, tmp_path) -> None:
    root, target = remembered_file(tmp_path)
    path = "/api/hooks/claude-code/file-context"
    hot = call(
        lane, environ("POST", path, body=json.dumps(gate_payload(root, target, "s-hot")).encode())
    )
    canonical = call(
        django_application,
        environ("POST", path, body=json.dumps(gate_payload(root, target, "s-dj")).encode()),
    )
    assert django_app.calls == []
    assert hot == canonical
    # The gate showed what memory knows about the file (its past observation).
    assert "Fixed pooling" in json.dumps(json.loads(hot[2])["hookSpecificOutput"])


@pytest.mark.parametrize("body,status", [(b"{not json", "400"), (b"", "400"), (b"[1, 2]", "400")])
def test_a_bad_hook_payload_gets_django_s_error(lane, django_app, body, status) -> None:
    path = "/api/hooks/claude-code/observation"
    hot = call(lane, environ("POST", path, body=body))
    canonical = call(django_application, environ("POST", path, body=body))
    assert hot == canonical and hot[0].startswith(status)


def test_an_oversized_hook_gets_the_limit_it_broke(lane, django_app, settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    path = "/api/hooks/claude-code/observation"
    hot = call(lane, environ("POST", path, body=_observation_payload("toolu_big")))
    canonical = call(
        django_application, environ("POST", path, body=_observation_payload("toolu_big"))
    )
    assert hot == canonical and hot[0].startswith("413")
    assert not Event.objects.exists()


@pytest.mark.parametrize(
    "headers", [{"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}]
)
def test_a_browser_s_write_goes_to_the_cross_site_guard(lane, django_app, headers) -> None:
    path = "/api/hooks/claude-code/observation"
    status, _, body = call(
        lane, environ("POST", path, body=_observation_payload("toolu_x"), headers=headers)
    )
    assert django_app.calls == [path]
    assert status.startswith("403") and b"cross-site" in body
    assert not Event.objects.exists()


def test_a_failing_read_is_answered_by_django(lane, django_app, ids, monkeypatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(hot_lane, "search_body", broken)
    status, _, body = call(lane, environ("GET", "/api/search", {"q": "pool"}))
    assert django_app.calls == ["/api/search"]
    assert status == "200 OK" and json.loads(body)["results"]


def test_a_failing_write_is_a_logged_500_with_the_security_headers(
    lane, django_app, monkeypatch, caplog
) -> None:
    def broken(**kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("memory.api.core.hook_handle", broken)
    with caplog.at_level(logging.ERROR, logger="memory.api.hot_lane"):
        status, headers, body = call(
            lane,
            environ("POST", "/api/hooks/claude-code/observation", body=_observation_payload("t")),
        )
    assert django_app.calls == []
    assert status.startswith("500") and json.loads(body)["error"].startswith(
        "internal server error"
    )
    assert "x-frame-options" in headers and "content-security-policy" in headers
    assert "boom" in caplog.text


def test_the_connections_are_checked_before_and_after_an_answer(lane, django_app) -> None:
    call(lane, environ("GET", "/api/health"))
    assert django_app.calls == [] and CONNECTION_CHECKS == ["x", "x"]


def test_a_receiver_of_its_own_gets_the_request_signals(django_app) -> None:
    seen: list[str] = []

    def started(**kwargs: object) -> None:
        seen.append("started")

    def finished(**kwargs: object) -> None:
        seen.append("finished")

    signals.request_started.connect(started)
    signals.request_finished.connect(finished)
    try:
        served = HotLane(django_app)  # sees a receiver that is not Django's
        served.headers()
        django_app.calls.clear()
        seen.clear()
        call(served, environ("GET", "/api/health"))
    finally:
        signals.request_started.disconnect(started)
        signals.request_finished.disconnect(finished)
    assert django_app.calls == [] and seen == ["started", "finished"]
    assert CONNECTION_CHECKS == []  # the signals carry the check instead


def test_the_lane_steps_aside_for_a_middleware_list_it_was_not_written_for(
    django_app, settings, caplog
) -> None:
    assert tuple(settings.MIDDLEWARE) == WRITTEN_FOR  # the project's list: the lane serves
    settings.MIDDLEWARE = [*settings.MIDDLEWARE, "django.middleware.gzip.GZipMiddleware"]
    with caplog.at_level(logging.WARNING, logger="memory.api.hot_lane"):
        served = HotLane(django_app)
    assert not served.enabled and "hot lane off" in caplog.text


@pytest.mark.parametrize("setting", ["SECURE_SSL_REDIRECT", "PREPEND_WWW"])
def test_the_lane_steps_aside_when_django_would_redirect(django_app, settings, setting) -> None:
    setattr(settings, setting, True)
    assert not HotLane(django_app).enabled


def test_cmem_hot_lane_0_turns_it_off(django_app, monkeypatch, tmp_path: Path) -> None:
    """The server's switch: with `CMEM_HOT_LANE=0` both listeners serve the Django app alone
    (no lane, so no header probe either), and a hook is stored and answered as before."""
    from memory.service.server import served_apps

    monkeypatch.setenv("CMEM_HOT_LANE", "0")
    listeners = served_apps(django_app, host="127.0.0.1", port=1, sock=tmp_path / "worker.sock")
    path = "/api/hooks/claude-code/observation"
    auth = {"Authorization": f"Bearer {credentials.ensure_secret()}"}  # TCP: the owner's secret
    answers = [
        call(app, environ("POST", path, body=_observation_payload(f"t{n}"), headers=auth))
        for n, (app, _) in enumerate(listeners)
    ]
    assert django_app.calls == [path, path]
    assert [status for status, _, _ in answers] == ["200 OK", "200 OK"]
    assert Event.objects.filter(session__session_id="hot-lane-session").count() == 2
    call(listeners[0][0], environ("GET", "/api/health"))
    assert django_app.calls == [path, path, "/api/health"]


def test_the_server_serves_both_listeners_through_the_lane(django_app, tmp_path: Path) -> None:
    from memory.service.server import served_apps

    listeners = served_apps(django_app, host="127.0.0.1", port=1, sock=tmp_path / "worker.sock")
    answers = [call(app, environ("GET", "/api/health", owner=False)) for app, _ in listeners]
    # Only the header probe reached Django; the Unix socket's answer is the owner's (the pid).
    assert django_app.calls == ["/api/health"]
    assert ["pid" in json.loads(body) for _, _, body in answers] == [False, True]
