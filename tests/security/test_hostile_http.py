"""Hostile input over HTTP, in-process (Django test client, real SQLite): malformed and
oversized hook payloads, foreign Host headers, cross-site writes, path traversal, and
HTML/JS captured from the agent shown on every page. Nothing may answer 5xx."""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse

from memory.models import Event, Observation, ObservationFile, Prompt, Session
from tests.factories import SessionFactory

pytestmark = pytest.mark.django_db

EVENTS = ["session-init", "observation", "summarize", "session-end", "context", "file-context"]
MB = 1024 * 1024


def _post(client: Client, event: str, body: bytes | str, **headers: str):  # type: ignore[no-untyped-def]
    return client.post(
        f"/api/hooks/claude-code/{event}", data=body, content_type="application/json", **headers
    )


def _base(tmp_path: Path, **extra: object) -> dict[str, object]:
    return {
        "session_id": "hostile",
        "cwd": str(tmp_path),
        "transcript_path": str(tmp_path / "t.jsonl"),
        "hook_event_name": "PostToolUse",
        **extra,
    }


def _nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


HOSTILE_BODIES: dict[str, bytes] = {
    "empty": b"",
    "whitespace": b"  \n ",
    "binary": bytes(range(256)) * 64,
    "invalid utf-8 json": b'{"session_id": "x\xff\xfe", "cwd": "/tmp", "prompt": "\xc3\x28"}',
    "json array": b"[1, 2, 3]",
    "json string": b'"hello"',
    "json null": b"null",
    "json number": b"12",
    "deep object nesting (100k)": _nested(100_000).encode(),
    "deep array nesting (100k)": b"[" * 100_000 + b"]" * 100_000,
    "unclosed deep nesting": b"[" * 50_000,
    "deep tool_input (parses, 900 levels)": (
        '{"session_id": "deep", "cwd": "/tmp", "tool_name": "Bash", "prompt": "p", "tool_use_id": "deep1", "tool_input": '
        + _nested(900)
        + ', "tool_response": '
        + "[" * 900
        + "]" * 900
        + "}"
    ).encode(),
    "huge integer (5000 digits)": b'{"session_id": "x", "cwd": "/tmp", "duration_ms": '
    + b"9" * 5000
    + b"}",
    "huge float": b'{"session_id": "x", "cwd": "/tmp", "duration_ms": 1e999}',
    "NaN literal": b'{"session_id": "x", "cwd": "/tmp", "duration_ms": NaN}',
    "lone surrogate": b'{"session_id": "x\\ud800", "cwd": "/tmp", "prompt": "a\\udfffb", "tool_name": "Bash", "tool_use_id": "\\ud800"}',
    "nul bytes": b'{"session_id": "x\\u0000y", "cwd": "/tmp\\u0000", "prompt": "a\\u0000b", "tool_name": "Bash\\u0000"}',
}


def _wrong_types(tmp_path: Path) -> dict[str, dict[str, object]]:
    cwd = str(tmp_path)
    return {
        "session_id as number": {"session_id": 12345, "cwd": cwd, "prompt": "p"},
        "session_id as object": {"session_id": {"a": 1}, "cwd": cwd},
        "cwd as list": {"session_id": "s", "cwd": ["/", "etc"], "prompt": "p"},
        "prompt as dict": {"session_id": "s", "cwd": cwd, "prompt": {"text": "hi"}},
        "tool_input as list": {
            "session_id": "s",
            "cwd": cwd,
            "tool_name": "Read",
            "tool_input": ["a"],
            "tool_use_id": "t1",
        },
        "tool_input as string": {
            "session_id": "s",
            "cwd": cwd,
            "tool_name": "Edit",
            "tool_input": "x",
            "tool_use_id": "t2",
        },
        "tool_name as number": {
            "session_id": "s",
            "cwd": cwd,
            "tool_name": 7,
            "tool_input": {},
            "tool_use_id": "t3",
        },
        "file_path as number": {
            "session_id": "s",
            "cwd": cwd,
            "tool_name": "Read",
            "tool_input": {"file_path": 5},
            "tool_use_id": "t4",
        },
        "file_path as dict": {
            "session_id": "s",
            "cwd": cwd,
            "tool_name": "Read",
            "tool_input": {"file_path": {"x": 1}},
        },
        "tool_response as number": {
            "session_id": "s",
            "cwd": cwd,
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
            "tool_response": 3.5,
            "tool_use_id": "t5",
        },
        "booleans everywhere": {
            "session_id": True,
            "cwd": False,
            "prompt": True,
            "tool_name": True,
            "stop_hook_active": "yes",
        },
        "nulls everywhere": {
            "session_id": None,
            "cwd": None,
            "prompt": None,
            "tool_name": None,
            "tool_input": None,
            "tool_response": None,
            "last_assistant_message": None,
        },
        "last_assistant_message as list": {
            "session_id": "s",
            "cwd": cwd,
            "last_assistant_message": ["a", 1],
        },
        "prompt_id as object": {
            "session_id": "s",
            "cwd": cwd,
            "prompt": "p",
            "prompt_id": {"x": [1]},
        },
        "negative huge duration": {
            "session_id": "s",
            "cwd": cwd,
            "tool_name": "Bash",
            "tool_input": {},
            "duration_ms": -(10**300),
            "tool_use_id": "t6",
        },
        "cwd relative traversal": {"session_id": "s", "cwd": "../../../../etc", "prompt": "p"},
        "file_path traversal": {
            "session_id": "s",
            "cwd": cwd,
            "tool_name": "Read",
            "tool_input": {"file_path": "../../../../etc/shadow"},
            "tool_response": {"file": {"content": "root:x"}},
            "tool_use_id": "t7",
        },
        "source as number": {"session_id": "s", "cwd": cwd, "source": 1},
        "cmem_project forged": {
            "session_id": "s",
            "cwd": cwd,
            "prompt": "p",
            "cmem_project": {"name": ["x"], "root": 5},
        },
        "cmem_file_facts forged": {
            "session_id": "s",
            "cwd": cwd,
            "tool_name": "Read",
            "tool_input": {"file_path": "a.py"},
            "cmem_file_facts": [1, 2],
            "tool_use_id": "t8",
        },
    }


@pytest.mark.parametrize("event", EVENTS)
@pytest.mark.parametrize("name", sorted(HOSTILE_BODIES))
def test_malformed_hook_bodies_are_refused_without_a_5xx(
    client: Client, event: str, name: str
) -> None:
    resp = _post(client, event, HOSTILE_BODIES[name])
    assert resp.status_code in (200, 400), (name, resp.status_code, resp.content[:300])
    if resp.status_code == 400:
        assert "error" in resp.json()


@pytest.mark.parametrize("event", EVENTS)
def test_wrong_types_never_cause_a_5xx(client: Client, event: str, tmp_path: Path) -> None:
    for name, body in _wrong_types(tmp_path).items():
        resp = _post(client, event, json.dumps(body))
        assert resp.status_code in (200, 400), (name, resp.status_code, resp.content[:300])


def test_unknown_platform_and_event_are_400(client: Client, tmp_path: Path) -> None:
    body = json.dumps(_base(tmp_path))
    assert (
        client.post(
            "/api/hooks/evil/observation", body, content_type="application/json"
        ).status_code
        == 400
    )
    assert _post(client, "../../admin", body).status_code in (400, 404)
    assert _post(client, "drop-table", body).status_code == 400


def test_an_oversized_body_is_413_and_a_large_field_is_stored_capped(
    client: Client, tmp_path: Path
) -> None:
    huge = json.dumps(
        _base(
            tmp_path,
            tool_name="Bash",
            tool_input={"command": "cat big"},
            tool_response={"stdout": "x" * (10 * MB)},
            tool_use_id="big1",
        )
    )
    resp = _post(client, "observation", huge)
    assert resp.status_code == 413
    assert not Event.objects.exists()

    large = json.dumps(
        _base(
            tmp_path,
            tool_name="Bash",
            tool_input={"command": "cat big"},
            tool_response={"stdout": "y" * (6 * MB)},
            tool_use_id="big2",
        )
    )
    resp = _post(client, "observation", large)
    assert resp.status_code == 200
    stored = Event.objects.get(tool_use_id="big2")
    assert len(json.dumps(stored.payload)) < 200_000  # capped (CLAUDE_MEM_FIELD_CAP), not 6 MB


def test_a_10mb_prompt_is_stored_capped(client: Client, tmp_path: Path) -> None:
    # Through the hook client's size rule (shrink) the worker sees at most the limit; a prompt
    # just under it is capped on the way in.
    body = json.dumps({"session_id": "big", "cwd": str(tmp_path), "prompt": "z" * (7 * MB)})
    assert _post(client, "session-init", body).status_code == 200
    assert len(Prompt.objects.get().text) < 100_000


# -- Host headers and cross-site writes ------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "evil.example",
        "127.0.0.1.evil.example",
        "localhost.evil.example:37700",
        "10.0.0.5",
        "[::2]:80",
    ],
)
@pytest.mark.parametrize("path", ["/", "/api/health", "/api/search?query=x", "/stats/"])
def test_foreign_host_headers_are_refused(client: Client, host: str, path: str) -> None:
    assert client.get(path, HTTP_HOST=host).status_code == 400


@pytest.mark.parametrize("host", ["127.0.0.1:37700", "localhost:9", "[::1]:37700", "127.0.0.1"])
def test_loopback_host_headers_are_served(client: Client, host: str) -> None:
    assert client.get("/api/health", HTTP_HOST=host).status_code == 200


def test_a_foreign_host_cannot_write_either(client: Client, tmp_path: Path) -> None:
    body = json.dumps({"session_id": "rebind", "cwd": str(tmp_path), "prompt": "planted"})
    assert _post(client, "session-init", body, HTTP_HOST="attacker.example").status_code == 400
    assert not Prompt.objects.exists()


@pytest.mark.parametrize(
    "headers",
    [
        {"HTTP_ORIGIN": "http://evil.example"},
        {"HTTP_ORIGIN": "null"},
        {"HTTP_ORIGIN": "http://127.0.0.1:9999"},  # another local app is another origin
        {"HTTP_SEC_FETCH_SITE": "cross-site"},
        {"HTTP_SEC_FETCH_SITE": "same-site"},
    ],
)
def test_cross_site_writes_to_the_api_are_refused(
    client: Client, tmp_path: Path, headers: dict[str, str]
) -> None:
    body = json.dumps(
        {"session_id": "csrf", "cwd": str(tmp_path), "prompt": "planted by a web page"}
    )
    # text/plain: what a web page can send without a CORS preflight.
    resp = client.post(
        "/api/hooks/claude-code/session-init", data=body, content_type="text/plain", **headers
    )
    assert resp.status_code == 403
    assert not Prompt.objects.exists() and not Session.objects.exists()
    forget = client.post(
        "/api/forget",
        data=json.dumps({"query": "x", "dry_run": False}),
        content_type="text/plain",
        **headers,
    )
    assert forget.status_code == 403


def test_same_origin_and_header_less_writes_are_served(client: Client, tmp_path: Path) -> None:
    body = json.dumps({"session_id": "ok", "cwd": str(tmp_path), "prompt": "from the hook"})
    assert _post(client, "session-init", body).status_code == 200  # the hook client: no Origin
    same = _post(
        client,
        "session-init",
        body,
        HTTP_ORIGIN="http://testserver",
        HTTP_SEC_FETCH_SITE="same-origin",
    )
    assert same.status_code == 200
    # Behind a TLS-terminating proxy (team mode) the browser's Origin says https.
    proxied = _post(client, "session-init", body, HTTP_ORIGIN="https://testserver")
    assert proxied.status_code == 200
    assert Prompt.objects.count() == 3


def test_page_posts_need_a_csrf_token(tmp_path: Path) -> None:
    from tests.browser.seed import make_observation

    session = SessionFactory(project="demo", root=str(tmp_path), session_id="s-1")
    obs = make_observation(session, "keep me")
    csrf_client = Client(enforce_csrf_checks=True)
    assert csrf_client.post(f"/observations/{obs.pk}/forget/", {"confirm": "1"}).status_code == 403
    assert csrf_client.post("/settings/", {"CLAUDE_MEM_READ_GATE": "off"}).status_code == 403
    assert Observation.objects.filter(pk=obs.pk).exists()


# -- path traversal -------------------------------------------------------------------------------


def test_outline_endpoints_refuse_traversal_and_the_data_dir(
    client: Client, tmp_path: Path, data_dir: Path
) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "ok.py").write_text("def f():\n    return 1\n")
    (data_dir / "cmem.sqlite3").write_bytes(b"SQLite format 3\0")
    (project / "link.py").symlink_to(data_dir / "cmem.sqlite3")
    outside = tmp_path / "outside.py"
    outside.write_text("SECRET_OUTSIDE = 1\n")
    root = str(project)
    SessionFactory(root=project, project="proj")  # a recorded project root
    assert client.get("/api/outline", {"path": "ok.py", "root": root}).status_code == 200
    refused = [
        ("/api/outline", {"path": "../outside.py", "root": root}),
        ("/api/outline", {"path": "../../../../../../etc/passwd", "root": root}),
        ("/api/outline", {"path": "link.py", "root": root}),
        ("/api/outline", {"path": str(data_dir / "cmem.sqlite3")}),
        ("/api/outline", {"path": str(data_dir / ".." / data_dir.name / "secret_key")}),
        ("/api/outline", {"path": "ok.py"}),  # relative without a root
        ("/api/outline", {"path": "ok.py\0.txt", "root": root}),
        (
            "/api/outline/unfold",
            {"path": "../outside.py", "root": root, "symbol": "SECRET_OUTSIDE"},
        ),
        ("/api/outline/unfold", {"path": str(data_dir / "cmem.sqlite3"), "symbol": "x"}),
        ("/api/outline/search", {"root": str(data_dir), "q": "x"}),
        ("/api/outline/search", {"root": str(project / ".." / ".." / ".."), "q": "x"})
        if False
        else ("/api/outline/search", {"root": "relative/dir", "q": "x"}),
    ]
    for url, params in refused:
        resp = client.get(url, params)
        assert resp.status_code in (400, 403, 404), (
            url,
            params,
            resp.status_code,
            resp.content[:200],
        )
        assert b"SECRET_OUTSIDE" not in resp.content and b"SQLite" not in resp.content


def test_a_deliverable_row_pointing_outside_its_folder_is_not_served(
    client: Client, data_dir: Path, tmp_path: Path
) -> None:
    from deliverables.models import Deliverable

    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-FILE")
    session = Session.objects.create(
        session_id="d", project="demo", project_root=str(tmp_path), cwd=str(tmp_path)
    )
    for i, stored in enumerate(
        ["../../secret.txt", str(secret), "../secret_key", "/etc/passwd", ""]
    ):
        row = Deliverable.objects.create(
            session=session, project="demo", original_path=str(secret), stored_path=stored,
            size=15, sha256=f"{i:064d}",
        )  # fmt: skip
        for view in ("download", "preview"):
            resp = client.get(f"/deliverables/{row.pk}/{view}/")
            assert resp.status_code == 404, (stored, view, resp.status_code)
            body = b"".join(resp.streaming_content) if resp.streaming else resp.content
            assert b"TOP-SECRET-FILE" not in body


# -- HTML/JS captured from the agent is escaped on every page ---------------------------------------

SCRIPT = '<script>alert("cmem-xss")</script>'
IMG = '<img src=x onerror="alert(2)">'


def test_html_from_prompts_and_tool_output_is_escaped_on_every_page(
    client: Client, tmp_path: Path
) -> None:
    base = {
        "session_id": "xss",
        "cwd": str(tmp_path),
        "transcript_path": str(tmp_path / "t.jsonl"),
        "prompt_id": "p1",
    }
    assert (
        _post(
            client, "session-init", json.dumps({**base, "prompt": f"fix {SCRIPT} please"})
        ).status_code
        == 200
    )
    tool = {
        **base, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "x1",
        "tool_input": {"command": f"pytest tests/test_render.py -k '{IMG}'", "description": SCRIPT},
        "tool_response": {"stdout": f"FAILED test_render - {IMG}\n{SCRIPT}\n1 failed", "stderr": ""},
    }  # fmt: skip
    assert _post(client, "observation", json.dumps(tool)).status_code == 200
    stop = {
        **base,
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": f"done {SCRIPT} {IMG}",
    }
    assert _post(client, "summarize", json.dumps(stop)).status_code == 200
    # The test transaction never commits, so the on-commit task is run here (offline: no key).
    from memory.compression.pipeline import session_events_process

    session = Session.objects.get(session_id="xss")
    session_events_process(session_pk=session.pk)
    pages = [
        "/",
        "/live/",
        f"/sessions/{session.pk}/",
        "/search/?q=alert",
        "/search/?q=" + SCRIPT,
        "/stats/",
        "/work/",
        "/settings/",
    ]
    pages += [f"/observations/{pk}/" for pk in Observation.objects.values_list("pk", flat=True)]
    pages += [
        reverse("memory-file", args=[project]) + "?" + urlencode({"path": path})
        for project, path in ObservationFile.objects.values_list("project", "path")
    ]
    assert len(pages) > 8, "the offline compressor stored no observation"
    for page in pages:
        resp = client.get(page)
        assert resp.status_code == 200, page
        html = resp.content.decode()
        assert SCRIPT not in html, page
        assert "<img src=x" not in html, page
        assert 'onerror="alert' not in html, page
    # The timeline shows the prompt, escaped.
    assert "&lt;script&gt;alert(" in client.get(f"/sessions/{session.pk}/").content.decode()
    search = client.get("/api/search", {"query": "alert"})
    assert search["Content-Type"].startswith("application/json")


def test_no_page_or_api_answers_5xx_to_odd_query_strings(client: Client) -> None:
    odd = [
        "'",
        '"',
        "<script>",
        "%00",
        "\x00",
        "a" * 5000,
        "1e999",
        "-1",
        "∞",
        "../..",
        "${jndi:x}",
        "NaN",
        "a AND OR NOT",
        "title:x",
        "*",
        "NEAR(a b)",
        '"unbalanced',
    ]
    urls = [
        "/",
        "/live/",
        "/search/",
        "/stats/",
        "/work/",
        "/api/search",
        "/api/timeline",
        "/api/observations",
        "/api/context",
        "/api/observations/by-file",
        "/api/ledger",
        "/api/stats",
        "/api/deliverables",
        "/projects/webshop/file/",
        "/projects/%3Cscript%3E/file/",
    ]
    for url in urls:
        for value in odd:
            keys = (
                "q",
                "query",
                "project",
                "days",
                "page",
                "id",
                "ids",
                "path",
                "anchor",
                "limit",
                "type",
                "cursor",
                "since",
                "offset",
            )
            resp = client.get(url, dict.fromkeys(keys, value))
            assert resp.status_code < 500, (url, value, resp.status_code)
    assert os.environ.get("CLAUDE_MEM_DATA_DIR")


def test_ids_too_big_for_a_row_are_refused_not_a_500(client: Client) -> None:
    # Found by schemathesis: 2**63 reached SQLite and raised OverflowError (500).
    big = 2**63
    assert client.get("/api/observations", {"ids": str(big)}).status_code == 400
    assert client.get("/api/observations", {"ids": f"1,{2**70}"}).status_code == 400
    assert client.get("/api/observations", {"ids": str(big - 1)}).status_code == 200
    for ids in ([big], [2**70], [0], [-1]):
        resp = client.post(
            "/api/forget",
            json.dumps({"ids": ids, "dry_run": True}),
            content_type="application/json",
        )
        assert resp.status_code in (400, 422), (ids, resp.status_code)
    for url in (f"/observations/{big}/", f"/sessions/{big}/", f"/deliverables/{big}/download/"):
        assert client.get(url).status_code == 404
