"""Issue 19: /api/ requests take a shorter middleware chain (memory/api/short_chain.py), and every
security check still runs on it: the owner's credential, the Host check, the cross-site
write guard, the security and CSP headers; pages keep the full chain."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from memory.api.short_chain import API_SKIPPED, LANE, lane_middleware
from memory.runtime import credentials
from memory.runtime.credentials import OWNER_SOCKET_ENVIRON

pytestmark = pytest.mark.django_db


def stranger() -> Client:
    return Client(**{OWNER_SOCKET_ENVIRON: False})


def test_the_lane_is_first_and_is_the_full_chain_minus_the_named_few() -> None:
    assert settings.MIDDLEWARE[0] == LANE
    lane = lane_middleware(list(settings.MIDDLEWARE))
    assert lane == [m for m in settings.MIDDLEWARE[1:] if m not in API_SKIPPED]
    for kept in (
        "django.middleware.security.SecurityMiddleware",
        "memory.access.cross_site.CrossSiteWriteGuard",
        "django.middleware.common.CommonMiddleware",
        "memory.team.auth.ApiTokenMiddleware",
        "memory.access.owner_auth.OwnerOnlyMiddleware",
        "memory.access.csp_headers.StaticCSPMiddleware",
    ):
        assert kept in lane


def test_an_api_call_skips_csrf_and_messages_but_a_page_does_not() -> None:
    client = Client()
    api = client.get("/api/health")
    assert api.status_code == 200
    # MessageMiddleware and CsrfViewMiddleware leave their marks on the request.
    assert not hasattr(api.wsgi_request, "_messages")
    assert not hasattr(api.wsgi_request, "csrf_processing_done")
    page = client.get("/")
    assert hasattr(page.wsgi_request, "_messages")
    assert api["Content-Security-Policy"] == page["Content-Security-Policy"]
    for header in ("X-Content-Type-Options", "Referrer-Policy", "X-Frame-Options"):
        assert api[header] == page[header]
    assert api["Content-Length"] == str(len(api.content))


def test_the_lane_refuses_a_stranger_and_accepts_the_owner_secret() -> None:
    refused = stranger().get("/api/observations?ids=1")
    assert refused.status_code == 401
    assert refused["WWW-Authenticate"] == 'Bearer realm="cmem"'
    secret = credentials.ensure_secret()
    ok = stranger().get("/api/observations?ids=1", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert ok.status_code == 200
    wrong = stranger().get("/api/observations?ids=1", HTTP_AUTHORIZATION=f"Bearer {secret}x")
    assert wrong.status_code == 401


def test_a_replaced_secret_is_used_at_once_and_the_old_one_refused(data_dir: Path) -> None:
    old = credentials.ensure_secret()
    path = credentials.secret_path()
    settled = time.time() - 10  # past the re-read window: the memo is what answers
    os.utime(path, (settled, settled))
    auth = {"HTTP_AUTHORIZATION": f"Bearer {old}"}
    assert stranger().get("/api/observations?ids=1", **auth).status_code == 200
    path.unlink()
    new = credentials.ensure_secret()
    os.utime(path, (settled, settled))
    assert stranger().get("/api/observations?ids=1", **auth).status_code == 401
    fresh = {"HTTP_AUTHORIZATION": f"Bearer {new}"}
    assert stranger().get("/api/observations?ids=1", **fresh).status_code == 200
    path.chmod(0o644)  # a secret others can read is trusted by nobody
    assert stranger().get("/api/observations?ids=1", **fresh).status_code == 401


def test_the_lane_checks_the_host_and_refuses_cross_site_writes() -> None:
    assert Client().get("/api/health", HTTP_HOST="evil.example").status_code == 400
    forged = Client().post(
        "/api/hooks/claude-code/observation",
        data="{}",
        content_type="text/plain",
        HTTP_SEC_FETCH_SITE="cross-site",
    )
    assert forged.status_code == 403
    assert "cross-site" in forged.json()["error"]


def test_team_mode_switched_on_in_settings_applies_to_the_next_call(data_dir: Path) -> None:
    from memory import config

    secret = credentials.ensure_secret()
    auth = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    assert stranger().get("/api/observations?ids=1", **auth).status_code == 200
    config.save({"CLAUDE_MEM_REQUIRE_TOKEN": "true"})
    # The owner's secret is no team token: with tokens required it is refused.
    assert stranger().get("/api/observations?ids=1", **auth).status_code == 401


def test_only_the_ninja_api_can_answer_a_path_under_api() -> None:
    """The lane skips CSRF for /api/: no page (a form that relies on CSRF) may live there."""
    from django.urls import URLResolver, get_resolver

    from cmem_site.api import api

    def routes(resolver: URLResolver, prefix: str) -> list[str]:
        found: list[str] = []
        for entry in resolver.url_patterns:
            route = prefix + str(entry.pattern)
            found += routes(entry, route) if isinstance(entry, URLResolver) else [route]
        return found

    top = get_resolver().url_patterns
    apis = [e for e in top if str(e.pattern) == "api/"]
    assert len(apis) == 1 and isinstance(apis[0], URLResolver)
    assert apis[0].namespace == api.urls_namespace
    others = [
        route
        for entry in top
        if entry is not apis[0]
        for route in (routes(entry, str(entry.pattern)) if isinstance(entry, URLResolver) else [str(entry.pattern)])
    ]  # fmt: skip
    assert others
    # A literal first segment other than api/ cannot match a path under /api/.
    assert not [r for r in others if r.startswith(("api", "<", "^"))]
