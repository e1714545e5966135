"""Search by meaning is the `embeddings` extra: with it, hybrid runs as asked; without it,
every surface answers by keyword and says so (API `mode`/`note`, the search page, `cmem
search`, the MCP tool, `cmem doctor`, `cmem status`), nothing is embedded and prompt-time
recall stays quiet.

This dev venv has the extra, so "absent" is `embeddings.missing()` answering as it does in a
runtime-only install (importlib finds no numpy/onnxruntime there). tests/package/test_wheel.py
proves the same from a real runtime-only install of the wheel.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from memory.briefing.prompt_recall import related_notes
from memory.models import Embedding, Observation, Session
from memory.retrieval import embeddings
from memory.retrieval.embeddings import store

pytestmark = pytest.mark.django_db

TITLE = "Refunds reuse compute_total() so partial refunds match checkout"


@pytest.fixture
def row() -> int:
    session = Session.objects.create(session_id="s-shop", project="shop")
    return Observation.objects.create(
        session=session, project="shop", type="bugfix", title=TITLE,
        narrative="The refund path now calls compute_total().",
    ).pk  # fmt: skip


@pytest.fixture
def absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embeddings, "missing", lambda: ("numpy", "onnxruntime"))


def test_the_extra_is_found_without_importing_it() -> None:
    # The dev extra includes cmemory[embeddings]; finding it must not import numpy (the hook
    # client and `cmem status` stay light).
    assert embeddings.available() and embeddings.unavailable_note() == ""
    assert set(embeddings.REQUIRED) == {"numpy", "onnxruntime"}


def test_with_the_extra_the_api_runs_hybrid_and_says_nothing(row: int, client: Client) -> None:
    store.embed_pending()
    data = client.get("/api/search", {"q": "refund totals"}).json()
    assert data["mode"] == "hybrid" and data["note"] == ""
    assert data["results"][0]["id"] == row


def test_without_it_the_api_answers_by_keyword_and_says_so(
    row: int, client: Client, absent: None
) -> None:
    for mode in ("hybrid", "semantic"):
        data = client.get("/api/search", {"q": "refunds", "mode": mode}).json()
        assert data["mode"] == "keyword"
        assert "search by meaning is off (numpy, onnxruntime not installed)" in data["note"]
        assert "cmemory[embeddings]" in data["note"]
        assert [r["id"] for r in data["results"]] == [row]
    keyword = client.get("/api/search", {"q": "refunds", "mode": "keyword"}).json()
    assert keyword["mode"] == "keyword" and keyword["note"] == ""  # asked for, nothing to say


def test_without_it_the_page_the_cli_and_mcp_say_so(
    row: int, client: Client, absent: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = client.get("/search/", {"q": "refunds"}).content.decode()
    # The page offers words only and says so once, without a warning on every search.
    assert 'id="words-only"' in page and "Words and meaning" not in page and TITLE in page

    out, err = io.StringIO(), io.StringIO()
    call_command("search", "refunds", stdout=out, stderr=err)
    assert f"#{row} " in out.getvalue() and "search by meaning is off" in err.getvalue()
    out = io.StringIO()
    call_command("search", "refunds", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data["mode"] == "keyword" and data["note"].startswith("search by meaning is off")

    from memory.retrieval import mcp_server

    def request(method: str, path: str, params: dict[str, object]) -> dict[str, object]:
        return Client().get(path, params).json()

    monkeypatch.setattr(mcp_server.worker, "request", request)
    text = mcp_server.search(query="refunds")
    assert text.startswith("note: search by meaning is off") and TITLE in text


def test_without_it_nothing_is_embedded_and_recall_is_quiet(
    row: int, absent: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = Session.objects.get(session_id="s-shop")
    assert store.embed_pending() == 0 and store.embed_session(session.pk) == 0
    assert not Embedding.objects.exists()
    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INJECT", "true")
    later = Session.objects.create(session_id="s-later", project="shop")
    assert related_notes(session=later, text="money given back to buyers") == ""
    with pytest.raises(CommandError, match=r"not installed \(numpy, onnxruntime missing\)"):
        call_command("embeddings", "backfill", "--no-progress")


def test_doctor_and_status_name_the_search_mode(
    tmp_path: Path, absent: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = io.StringIO()
    with pytest.raises(CommandError):  # hooks are not installed in this settings file
        call_command("doctor", claude_settings=tmp_path / "s.json", stdout=out)
    text = out.getvalue()
    assert (
        "search: keyword only, search by meaning is off (numpy, onnxruntime not installed)" in text
    )
    assert "cmemory[embeddings]" in text

    monkeypatch.setenv("HOME", str(tmp_path))
    out = io.StringIO()
    with pytest.raises(SystemExit):  # no worker runs
        call_command("status", stdout=out)
    assert "search   keyword only: search by meaning is off" in out.getvalue()
    out = io.StringIO()
    with pytest.raises(SystemExit):
        call_command("status", "--json", stdout=out)
    assert json.loads(out.getvalue())["search"]["semantic"] is False


def test_doctor_and_status_with_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("doctor", claude_settings=tmp_path / "s.json", stdout=out)
    assert "search: hybrid (words and meaning" in out.getvalue()
    monkeypatch.setenv("HOME", str(tmp_path))
    out = io.StringIO()
    with pytest.raises(SystemExit):
        call_command("status", stdout=out)
    assert "search   hybrid: words and meaning" in out.getvalue()
