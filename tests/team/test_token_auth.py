"""Token auth on the HTTP API: missing, wrong, revoked -> 401 and nothing stored."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from memory.models import Event, Prompt, Session
from memory.team.tokens import token_create, token_revoke
from tests.support import CLAUDE_FIXTURES

pytestmark = [pytest.mark.django_db, pytest.mark.team]

PROMPT = (CLAUDE_FIXTURES / "UserPromptSubmit.json").read_bytes()
TOOL_USE = (CLAUDE_FIXTURES / "PostToolUse.json").read_bytes()


@pytest.fixture
def require_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_REQUIRE_TOKEN", "true")


@pytest.fixture
def api() -> Client:
    return Client(enforce_csrf_checks=True)


def _post(api: Client, event: str, body: bytes, token: str | None = None):  # type: ignore[no-untyped-def]
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return api.post(
        f"/api/hooks/claude-code/{event}",
        data=body,
        content_type="application/json",
        headers=headers,
    )


def _stored() -> int:
    return Session.objects.count() + Prompt.objects.count() + Event.objects.count()


@pytest.mark.usefixtures("require_token")
@pytest.mark.parametrize("event,body", [("session-init", PROMPT), ("observation", TOOL_USE)])
def test_missing_token_is_401_and_nothing_stored(api: Client, event: str, body: bytes) -> None:
    resp = _post(api, event, body)
    assert resp.status_code == 401
    assert "missing API token" in resp.json()["error"]
    assert resp["WWW-Authenticate"].startswith("Bearer")
    assert _stored() == 0


@pytest.mark.usefixtures("require_token")
def test_wrong_token_is_401_and_nothing_stored(api: Client) -> None:
    token_create(user=get_user_model().objects.create(username="alice"))
    for wrong in ["cmem_" + "x" * 43, "garbage", ""]:
        resp = _post(api, "session-init", PROMPT, token=wrong)
        assert resp.status_code == 401, wrong
    basic = api.post(
        "/api/hooks/claude-code/session-init",
        data=PROMPT,
        content_type="application/json",
        headers={"Authorization": "Basic YTpi"},
    )
    assert basic.status_code == 401
    assert _stored() == 0


@pytest.mark.usefixtures("require_token")
def test_revoked_token_is_401_and_nothing_stored(api: Client) -> None:
    token, raw = token_create(user=get_user_model().objects.create(username="alice"))
    token_revoke(token=token)
    resp = _post(api, "session-init", PROMPT, token=raw)
    assert resp.status_code == 401
    assert "revoked" in resp.json()["error"]
    assert _stored() == 0


@pytest.mark.usefixtures("require_token")
def test_valid_token_is_served_and_stored(api: Client) -> None:
    token, raw = token_create(user=get_user_model().objects.create(username="alice"))
    assert _post(api, "session-init", PROMPT, token=raw).status_code == 200
    assert _post(api, "observation", TOOL_USE, token=raw).status_code == 200
    assert Session.objects.count() == 1
    assert Prompt.objects.count() == 1
    assert Event.objects.count() == 1
    token.refresh_from_db()
    assert token.last_used is not None


@pytest.mark.usefixtures("require_token")
def test_every_api_call_needs_it_but_health(api: Client) -> None:
    assert api.get("/api/health").status_code == 200
    assert api.get("/api/stats").status_code == 401
    assert api.get("/api/search", {"q": "x"}).status_code == 401
    _, raw = token_create(user=get_user_model().objects.create(username="alice"))
    assert api.get("/api/stats", headers={"Authorization": f"Bearer {raw}"}).status_code == 200


@pytest.mark.usefixtures("require_token")
def test_pages_need_a_staff_login(api: Client, admin_client: Client) -> None:
    resp = api.get("/")
    assert resp.status_code == 302 and resp["Location"].startswith("/admin/login/")
    assert api.get("/admin/login/").status_code == 200
    assert admin_client.get("/").status_code == 200
    # A signed-in admin may read the API; writing still takes a token.
    assert admin_client.get("/api/stats").status_code == 200
    resp = admin_client.post(
        "/api/hooks/claude-code/session-init", data=PROMPT, content_type="application/json"
    )
    assert resp.status_code == 401
    assert Session.objects.count() == 0


def test_local_default_needs_no_token(api: Client) -> None:
    assert _post(api, "session-init", PROMPT).status_code == 200
    assert Session.objects.count() == 1


def test_a_non_loopback_bind_turns_it_on(api: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_WORKER_HOST", "0.0.0.0")
    assert _post(api, "session-init", PROMPT).status_code == 401
    monkeypatch.setenv("CLAUDE_MEM_WORKER_HOST", "::1")
    assert _post(api, "session-init", PROMPT).status_code == 200
