"""Issue 15 §2: My Work and previews load nothing remote (CSP on every page, images as links)."""

from __future__ import annotations

import pytest
from django.test import Client

from deliverables.services import markdown_to_safe_html

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "path", ["/", "/work/", "/search/", "/stats/", "/settings/", "/api/health"]
)
def test_every_response_carries_the_content_security_policy(path: str) -> None:
    response = Client().get(path)
    policy = response.headers.get("Content-Security-Policy", "")
    assert "img-src 'self' data:" in policy
    assert "script-src 'self'" in policy and "default-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy


def test_a_remote_markdown_image_becomes_a_plain_link() -> None:
    html = markdown_to_safe_html("report ![pixel](https://tracker.example/p.png?u=1)")
    assert "<img" not in html
    assert 'href="https://tracker.example/p.png?u=1"' in html and ">pixel</a>" in html
