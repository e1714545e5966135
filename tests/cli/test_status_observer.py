"""`cmem status` says which observer provider is used and where its key and URL came from,
never the key itself; Claude Code's inherited ANTHROPIC_BASE_URL is not the observer's."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command


def _status(*args: str) -> str:
    out = io.StringIO()
    with pytest.raises(SystemExit):
        call_command("status", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_status_shows_the_observer_sources(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-status-secret-0123456789")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://claude-code-gateway.invalid")
    text = _status()
    assert (
        "observer anthropic (auto: Anthropic API key from ANTHROPIC_API_KEY (environment))" in text
    )
    assert "key      from ANTHROPIC_API_KEY (environment)" in text
    assert "base URL from default (api.anthropic.com)" in text
    assert "status-secret" not in text
    monkeypatch.setenv("CLAUDE_MEM_ANTHROPIC_BASE_URL", "http://127.0.0.1:4000")
    data = json.loads(_status("--json"))
    assert data["observer"] == {
        "provider": "anthropic",
        "why": "auto: Anthropic API key from ANTHROPIC_API_KEY (environment)",
        "key": "ANTHROPIC_API_KEY (environment)",
        "base_url": "CLAUDE_MEM_ANTHROPIC_BASE_URL",
    }


@pytest.mark.django_db
def test_status_counts_the_rows_waiting_for_a_vector(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    from memory.models import Observation, Session
    from memory.retrieval.embeddings import store

    monkeypatch.setenv("HOME", str(tmp_path))
    session = Session.objects.create(session_id="s-wait", project="p")
    for n in range(3):
        Observation.objects.create(session=session, project="p", type="change", title=f"row {n}")
    assert "3 row(s) wait for a vector" in _status()
    assert json.loads(_status("--json"))["search"]["waiting_for_vector"] == 3
    store.embed_pending()
    assert "wait for a vector" not in _status()
    assert json.loads(_status("--json"))["search"]["waiting_for_vector"] == 0
