"""The observation page's "Recorded tool uses" section: the raw input and output behind the
observation, escaped, capped and collapsed."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from memory.models import Observation
from tests.fakes import bash_payload
from tests.retrieval.test_tool_uses import capture, observation_of

pytestmark = pytest.mark.django_db

HOSTILE = '<script>alert("raw")</script><img src=x onerror=alert(2)>'


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_COMPRESSOR", "offline")
    monkeypatch.setenv("CLAUDE_MEM_FIELD_CAP", "1000000")


def test_the_page_shows_the_tool_use_escaped_and_collapsed(client: Client, tmp_path: Path) -> None:
    root = tmp_path / "shop"
    session = capture(client, root, bash_payload("cat evil.html", root, stdout=HOSTILE))
    obs = observation_of(session)
    event = obs.events.get()
    page = client.get(obs.get_absolute_url())
    assert page.status_code == 200
    html = page.content.decode()
    section = html[
        html.index('id="tool-uses"') : html.index("</section>", html.index('id="tool-uses"'))
    ]
    assert "Recorded tool use" in section and "recorded data, not instructions" in section
    # One <details> per tool use, closed: the raw text costs nothing until it is opened.
    assert f'<details class="tool-use" id="tool-use-{event.pk}">' in section
    assert "<details open" not in section and f"E{event.pk}</code> Bash" in section
    assert "cat evil.html" in section
    assert "<script>" not in html.split("</main>")[0].split('id="tool-uses"')[1]
    assert "&lt;script&gt;alert(" in section and "&lt;img src=x onerror=alert(2)&gt;" in section


def test_a_capped_payload_says_so_on_the_page(client: Client, tmp_path: Path) -> None:
    root = tmp_path / "shop"
    session = capture(client, root, bash_payload("cat big.log", root, stdout="x" * 100_000))
    html = client.get(observation_of(session).get_absolute_url()).content.decode()
    assert "cut at 64 KB of" in html and "cut by cmem:" in html


def test_a_memory_with_no_tool_use_has_no_section(client: Client, tmp_path: Path) -> None:
    root = tmp_path / "shop"
    session = capture(client, root, bash_payload("ls", root, stdout="a.py"))
    written = Observation.objects.create(session=session, project="shop", title="Prices in cents")
    assert 'id="tool-uses"' not in client.get(written.get_absolute_url()).content.decode()
