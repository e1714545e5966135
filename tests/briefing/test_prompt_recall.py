"""Prompt-time recall (CLAUDE_MEM_SEMANTIC_INJECT) through the real UserPromptSubmit hook."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from memory.briefing.prompt_recall import HEADER, TOKEN_BUDGET
from memory.models import Observation, Session
from memory.retrieval.embeddings import store
from tests.support.paths import CLAUDE_FIXTURES

pytestmark = pytest.mark.django_db

PROMPT = "why did money given back to buyers disagree with what they paid at purchase"
# The notes PROMPT is about: both refund rows answer it (the bundled model puts the receipts
# row, whose narrative explains the returned amount, nearest).
REFUND_NOTES = ("refunds", "refund_tax")


@pytest.fixture
def earlier(tmp_path: Path) -> dict[str, Any]:
    cwd = tmp_path / "demo"
    cwd.mkdir()
    old = Session.objects.create(
        session_id="earlier", project="demo", started=timezone.now() - timedelta(days=3)
    )
    now = timezone.now()

    def obs(title: str, narrative: str, days: float) -> int:
        return Observation.objects.create(
            session=old, project="demo", type="bugfix", title=title, narrative=narrative,
            created=now - timedelta(days=days),
        ).pk  # fmt: skip

    ids = {
        "refunds": obs("Refunds reuse compute_total() so partial refunds match checkout",
                       "Refund amounts had their own rounding; the refund path calls compute_total().", 2),
        "refund_tax": obs("Refund receipts show the tax withheld on partial refunds",
                          "Receipts list the VAT share of a refund so the returned amount is explained.", 2.5),
        "redis": obs("Redis connection pool exhausted under load", "A shared pool fixed the spikes.", 1),
        "backup": obs("Nightly Postgres backups moved to WAL archiving", "pg_dump locked tables.", 0.5),
    }  # fmt: skip
    store.embed_pending()
    return {"cwd": cwd, "ids": ids}


def _prompt(client: Client, cwd: Path, text: str = PROMPT, sid: str = "now-1") -> dict[str, Any]:
    payload = json.loads((CLAUDE_FIXTURES / "UserPromptSubmit.json").read_text())
    payload.update(prompt=text, cwd=str(cwd), session_id=sid)
    resp = Client().post(
        "/api/hooks/claude-code/session-init",
        data=json.dumps(payload),
        content_type="application/json",
    )
    assert resp.status_code == 200, resp.content
    return resp.json()


def test_off_by_default(earlier: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_CONTEXT_OBSERVATIONS", "0")
    assert _prompt(Client(), earlier["cwd"]) == {}


def test_related_notes_from_earlier_sessions_are_added(
    earlier: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INJECT", "true")
    # The SessionStart index showed the two newest observations: never repeated.
    monkeypatch.setenv("CLAUDE_MEM_CONTEXT_OBSERVATIONS", "2")
    out = _prompt(Client(), earlier["cwd"])
    spec = out["hookSpecificOutput"]
    assert spec["hookEventName"] == "UserPromptSubmit"
    context = spec["additionalContext"]
    assert context.startswith(HEADER)
    ids = earlier["ids"]
    assert any(f"#{ids[note]} " in context for note in REFUND_NOTES)
    assert f"#{ids['redis']} " not in context and f"#{ids['backup']} " not in context
    assert len(context) // 4 <= TOKEN_BUDGET


def test_what_the_session_start_index_showed_is_not_repeated(
    earlier: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INJECT", "true")
    monkeypatch.setenv("CLAUDE_MEM_CONTEXT_OBSERVATIONS", "50")  # the index showed all four
    assert _prompt(Client(), earlier["cwd"]) == {}


def test_the_limit_and_this_sessions_own_notes(
    earlier: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INJECT", "true")
    monkeypatch.setenv("CLAUDE_MEM_CONTEXT_OBSERVATIONS", "0")
    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INJECT_LIMIT", "1")
    context = _prompt(Client(), earlier["cwd"])["hookSpecificOutput"]["additionalContext"]
    assert len(context.splitlines()) == 2  # the header and one note
    # Notes recorded in the current session are not "earlier sessions".
    session = Session.objects.get(session_id="now-1")
    Observation.objects.filter(pk__in=earlier["ids"].values()).update(session=session)
    assert _prompt(Client(), earlier["cwd"], text=PROMPT + " again") == {}


def test_the_hook_stays_fast_with_recall_on(
    earlier: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INJECT", "true")
    monkeypatch.setenv("CLAUDE_MEM_CONTEXT_OBSERVATIONS", "0")
    _prompt(Client(), earlier["cwd"], sid="warm")  # the model and the vector matrix load once
    times = []
    for n in range(5):
        began = time.perf_counter()
        out = _prompt(Client(), earlier["cwd"], text=f"{PROMPT} {n}", sid="timed")
        times.append(time.perf_counter() - began)
        assert "additionalContext" in out["hookSpecificOutput"]
    # Generous for a shared CI machine; `python -m tests.bench recall` reports the figure itself.
    assert sorted(times)[2] < 0.25


def test_many_long_related_notes_stay_within_the_token_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INJECT", "true")
    monkeypatch.setenv("CLAUDE_MEM_CONTEXT_OBSERVATIONS", "0")
    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INJECT_LIMIT", "10")
    cwd = tmp_path / "demo"
    cwd.mkdir()
    old = Session.objects.create(
        session_id="earlier", project="demo", started=timezone.now() - timedelta(days=3)
    )
    # Ten notes all about refunds disagreeing with purchases, each title ~66 tokens long (264
    # characters; the column holds 300):
    # the limit would allow all ten, the budget only a few.
    for n in range(10):
        Observation.objects.create(
            session=old, project="demo", type="bugfix",
            title=f"Refund {n} paid back to buyers disagreed with the purchase total " * 4,
            narrative="Refund amounts had their own rounding; the refund path calls compute_total().",
        )  # fmt: skip
    store.embed_pending()
    context = _prompt(Client(), cwd)["hookSpecificOutput"]["additionalContext"]
    notes = context.splitlines()[1:]
    assert 1 <= len(notes) < 10
    assert len(context) // 4 <= TOKEN_BUDGET


def test_other_projects_crowding_the_nearest_rows_fall_back_to_the_project_scan(
    earlier: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The unfiltered scan's nearest rows may all belong to other projects: the recall then
    scans the project's own rows, and still finds its note."""
    from memory.briefing import prompt_recall

    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INJECT", "true")
    monkeypatch.setenv("CLAUDE_MEM_CONTEXT_OBSERVATIONS", "0")
    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INJECT_LIMIT", "1")
    other = Session.objects.create(session_id="elsewhere", project="shop")
    shop = [
        Observation.objects.create(
            session=other, project="shop", type="bugfix",
            title=f"Money given back to buyers disagreed with what they paid at purchase {n}",
            narrative="Refunds paid back to buyers now match what they paid at purchase.",
        ).pk
        for n in range(3)
    ]  # fmt: skip
    store.embed_pending()
    scans: list[str] = []
    real = prompt_recall._filtered
    monkeypatch.setattr(prompt_recall, "FIRST_EXTRA", 0)
    monkeypatch.setattr(prompt_recall, "WIDE_DEPTH", 2)
    monkeypatch.setattr(
        prompt_recall, "_filtered", lambda *a, **kw: scans.append("project") or real(*a, **kw)
    )
    context = _prompt(Client(), earlier["cwd"])["hookSpecificOutput"]["additionalContext"]
    assert scans == ["project"]  # the three shop rows filled both rounds
    assert any(f"#{earlier['ids'][note]} " in context for note in REFUND_NOTES)
    assert not any(f"#{pk} " in context for pk in shop) and len(context.splitlines()) == 2


def test_a_restricted_viewer_is_recalled_only_its_own_notes(
    earlier: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Team mode's rule on the raw read's other path: a viewer limited to its own rows
    (a teammate's token) never gets another user's note, however near it is."""
    from django.contrib.auth import get_user_model

    from memory.briefing.prompt_recall import related_notes
    from memory.team.scope import viewer_scope

    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INJECT", "true")
    monkeypatch.setenv("CLAUDE_MEM_CONTEXT_OBSERVATIONS", "0")
    users = get_user_model().objects
    alice, bob = users.create(username="alice"), users.create(username="bob")
    Session.objects.filter(session_id="earlier").update(owner=alice)
    now = Session.objects.create(session_id="now-bob", project="demo", owner=bob)
    with viewer_scope(user_id=alice.pk, staff=False):
        notes = related_notes(session=now, text=PROMPT)
        assert any(f"#{earlier['ids'][note]} " in notes for note in REFUND_NOTES)
    with viewer_scope(user_id=bob.pk, staff=False):
        assert related_notes(session=now, text=PROMPT) == ""
