from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db


def test_health_answers_with_the_contract_shape(client) -> None:
    resp = client.get("/api/health")
    assert resp.status_code == 200
    body = resp.json()
    assert body["status"] == "ok" and body["service"] == "cmem" and body["version"]


def test_stats_counts_start_at_zero(client) -> None:
    body = client.get("/api/stats").json()
    assert body == {
        "sessions": 0,
        "prompts": 0,
        "observations": 0,
        "summaries": 0,
        "deliverables": 0,
        "pending": 0,
    }


def test_hook_endpoint_rejects_malformed_json_with_a_clear_error(client) -> None:
    resp = client.post(
        "/api/hooks/claude-code/observation", data=b"{nope", content_type="application/json"
    )
    assert resp.status_code == 400
    assert "not JSON" in json.loads(resp.content)["error"]


def test_api_docs_load_nothing_from_a_cdn(client) -> None:
    page = client.get("/api/docs").content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in page
    assert "https://" not in page and "http://" not in page
    assert client.get("/static/ninja/swagger-ui-bundle.js").status_code == 200
