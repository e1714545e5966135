"""The owner scope on SQLite (memory/team/scope.py): the FTS5 and vector paths of search,
hooks naming another user's session, and the local worker left exactly as it was.

The full cross-user attack on a real team server (PostgreSQL, Redis, HTTP, MCP) is
tests/team/test_isolation.py; this file proves the SQLite backend honours the same seam,
through Django's test client with tokens required.
"""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from memory.models import Observation, Prompt, Session, Summary
from memory.retrieval.embeddings import store
from memory.retrieval.search.query import SearchQuery
from memory.retrieval.search.service import search
from memory.team.scope import ForeignSession, owned, session_check, viewer_scope
from memory.team.tokens import token_create

pytestmark = pytest.mark.django_db

MODES = ("keyword", "semantic", "hybrid")


@pytest.fixture
def two_users(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    monkeypatch.setenv("CLAUDE_MEM_REQUIRE_TOKEN", "true")
    users = {name: get_user_model().objects.create(username=name) for name in ("alice", "bob")}
    staff = get_user_model().objects.create(username="sam", is_staff=True)
    world: dict[str, object] = {"tokens": {}, "obs": {}, "sessions": {}}
    for name, user in users.items():
        session = Session.objects.create(session_id=f"s-{name}", project="shop", owner=user)
        word = {"alice": "zebrafruit", "bob": "kiwiberry"}[name]
        obs = Observation.objects.create(
            session=session, project="shop", type="bugfix",
            title=f"Refunds reuse the {word} rounding so totals match checkout",
            narrative=f"The {word} refund path computed its own rounding.",
        )  # fmt: skip
        Summary.objects.create(session=session, project="shop", request=f"fix {word} refunds")
        Prompt.objects.create(session=session, number=1, text=f"why do {word} refunds differ")
        world["tokens"][name] = token_create(user=user)[1]  # type: ignore[index]
        world["obs"][name] = obs.pk  # type: ignore[index]
        world["sessions"][name] = session.pk  # type: ignore[index]
    world["tokens"]["sam"] = token_create(user=staff)[1]  # type: ignore[index]
    store.embed_pending()
    return world


def _get(token: str, path: str, **params: str) -> dict:  # type: ignore[type-arg]
    reply = Client().get(path, params, headers={"Authorization": f"Bearer {token}"})
    assert reply.status_code == 200, reply.content
    return reply.json()


@pytest.mark.parametrize("mode", MODES)
def test_sqlite_search_in_every_mode_returns_only_the_tokens_own_rows(
    two_users: dict[str, dict[str, object]], mode: str
) -> None:
    tokens, sessions = two_users["tokens"], two_users["sessions"]
    # The third is about the rows' meaning more than their words. It was "money given back
    # differs" until the idf-weighted model (issue 18): the made-up words weigh more in the
    # rows' vectors now, and that phrase fell under the similarity floor for bob's rows.
    for query in ("zebrafruit refunds", "refund rounding totals", "refunded money differs"):
        bob = _get(tokens["bob"], "/api/search", q=query, mode=mode)["results"]  # type: ignore[arg-type]
        assert {hit["session"] for hit in bob} <= {sessions["bob"]}, (query, bob)
        staff = _get(tokens["sam"], "/api/search", q=query, mode=mode)["results"]  # type: ignore[arg-type]
        if query != "zebrafruit refunds":
            assert {hit["session"] for hit in staff} == {sessions["alice"], sessions["bob"]}, query
    own = _get(tokens["bob"], "/api/search", q="kiwiberry refunds", mode=mode)["results"]  # type: ignore[arg-type]
    assert own and {hit["session"] for hit in own} == {sessions["bob"]}
    mixed = _get(tokens["sam"], "/api/search", q="zebrafruit refunds", mode=mode)["results"]  # type: ignore[arg-type]
    assert sessions["alice"] in {hit["session"] for hit in mixed}


def test_a_hook_naming_another_users_session_stores_nothing(
    two_users: dict[str, dict[str, object]],
) -> None:
    body = {
        "session_id": "s-alice",
        "cwd": "/tmp/shop",
        "transcript_path": "",
        "prompt_id": "x",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "bob writes into alice's session",
    }
    reply = Client().post(
        "/api/hooks/claude-code/session-init",
        data=json.dumps(body),
        content_type="application/json",
        headers={"Authorization": f"Bearer {two_users['tokens']['bob']}"},
    )
    assert reply.status_code == 200
    assert not Prompt.objects.filter(text__contains="bob writes").exists()
    assert Prompt.objects.filter(session__session_id="s-alice").count() == 1


def test_without_a_viewer_everything_is_visible_and_new_rows_have_no_owner() -> None:
    """The local single-user worker: no scope, no owners, every row, as before team mode."""
    session = Session.objects.create(session_id="local", project="shop")
    Observation.objects.create(session=session, project="shop", title="local zebrafruit note")
    other = get_user_model().objects.create(username="someone")
    Observation.objects.create(
        session=Session.objects.create(session_id="theirs", project="shop", owner=other),
        project="shop",
        title="their zebrafruit note",
    )
    assert owned(Observation.objects.all()).count() == 2
    assert len(search(SearchQuery(text="zebrafruit"))) == 2
    session_check(None)  # any session may be written locally
    session_check(other.pk)
    with viewer_scope(user_id=other.pk, staff=False):
        assert [o.title for o in owned(Observation.objects.all())] == ["their zebrafruit note"]
        assert [h.title for h in search(SearchQuery(text="zebrafruit"))] == [
            "their zebrafruit note"
        ]
        with pytest.raises(ForeignSession):
            session_check(None)
    with viewer_scope(user_id=other.pk, staff=True):
        assert owned(Observation.objects.all()).count() == 2
        with pytest.raises(ForeignSession):
            session_check(None)  # staff read everything but write only their own sessions
