"""ALLOWED_HOSTS: only loopback names, so a web page cannot reach the API by DNS rebinding."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "localhost", "[::1]", "127.0.0.1:37701", "localhost:37701"]
)
def test_loopback_names_are_served(client, host: str) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/api/health", HTTP_HOST=host).status_code == 200


@pytest.mark.parametrize(
    "host",
    ["evil.example", "rebind.attacker.test:37701", "127.0.0.1.nip.io", "0.0.0.0", "192.168.1.5"],
)
def test_other_host_headers_get_400(client, host: str) -> None:  # type: ignore[no-untyped-def]
    resp = client.get("/api/health", HTTP_HOST=host)
    assert resp.status_code == 400
    assert b'"service"' not in resp.content


def test_a_rebinding_page_cannot_post_a_hook(client) -> None:  # type: ignore[no-untyped-def]
    resp = client.post(
        "/api/hooks/claude-code/observation",
        data=b"{}",
        content_type="application/json",
        HTTP_HOST="evil.example",
    )
    assert resp.status_code == 400
