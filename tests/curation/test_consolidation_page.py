"""The consolidation page (list, undo with CSRF, run with a dry run first) and its API."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from memory.curation.consolidation.run import consolidation_run
from memory.models import Observation, ObservationRevision
from memory.team.scope import viewer_scope
from tests.curation.consolidation_support import fresh, obs, session

pytestmark = pytest.mark.django_db

URL = "/consolidation/"


@pytest.fixture(autouse=True)
def _rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_CONSOLIDATE", "rules")


@pytest.fixture
def csrf_client() -> Client:
    return Client(enforce_csrf_checks=True)


def _token(client: Client) -> str:
    page = client.get(URL)
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode())
    assert found
    return found.group(1)


def _folded() -> tuple[Observation, Observation]:
    sess = session()
    old = obs(
        sess, "Checkout rounds before tax", narrative="off by a cent", files=("c.py",), days_ago=2
    )
    new = obs(
        sess, "Checkout rounds before tax", narrative="off by a cent", files=("c.py",), days_ago=1
    )
    consolidation_run()
    return old, new


def test_the_page_lists_every_change_with_its_reason_a_link_and_an_undo(client: Client) -> None:
    old, new = _folded()
    revision = ObservationRevision.objects.get(observation=old)
    body = client.get(URL).content.decode()
    assert reverse("memory-consolidation") == URL
    assert f'id="change-{revision.pk}"' in body
    assert f"duplicate of #{new.pk}" in body
    assert reverse("memory-observation-detail", args=[old.pk]) in body
    assert f'name="undo" value="{revision.pk}"' in body
    assert revision.batch in body
    assert "<h1" in body and "Consolidation" in body


def test_undo_through_the_page_needs_csrf_restores_and_is_not_redone(csrf_client: Client) -> None:
    old, _new = _folded()
    revision = ObservationRevision.objects.get(observation=old)
    assert csrf_client.post(URL, {"undo": revision.pk}).status_code == 403  # no token
    assert fresh(old).status == "superseded"
    resp = csrf_client.post(URL, {"undo": revision.pk, "csrfmiddlewaretoken": _token(csrf_client)})
    assert resp.status_code == 302
    assert fresh(old).status == "current" and fresh(old).superseded_by_id is None
    page = csrf_client.get(URL).content.decode()
    assert f"Undid change #{revision.pk}" in page and "undone" in page
    assert consolidation_run().changes == []  # the pass does not redo it
    # Undoing it again, or a revision that is not the pass's, is refused with a reason.
    token = _token(csrf_client)
    again = csrf_client.post(URL, {"undo": revision.pk, "csrfmiddlewaretoken": token})
    assert again.status_code == 400 and b"already undone" in again.content
    person = ObservationRevision.objects.filter(actor="user").first()
    assert person is not None  # the undo itself, by the person
    other = csrf_client.post(URL, {"undo": person.pk, "csrfmiddlewaretoken": token})
    assert other.status_code == 404 and b"No consolidation change" in other.content
    bad = csrf_client.post(URL, {"undo": "abc", "csrfmiddlewaretoken": token})
    assert bad.status_code == 400 and fresh(old).status == "current"


def test_run_now_dry_run_shows_the_plan_and_changes_nothing_then_runs(csrf_client: Client) -> None:
    sess = session()
    old = obs(
        sess, "Checkout rounds before tax", narrative="off by a cent", files=("c.py",), days_ago=2
    )
    obs(sess, "Checkout rounds before tax", narrative="off by a cent", files=("c.py",), days_ago=1)
    token = _token(csrf_client)
    resp = csrf_client.post(URL, {"run": "on", "dry_run": "on", "csrfmiddlewaretoken": token})
    assert resp.status_code == 200
    body = resp.content.decode()
    assert "Dry run (rules): 1 change(s) would be made; nothing was changed." in body
    assert f"#{old.pk} Checkout rounds before tax" in body
    assert fresh(old).status == "current" and not ObservationRevision.objects.exists()
    resp = csrf_client.post(URL, {"run": "on", "csrfmiddlewaretoken": token}, follow=True)
    assert "1 change(s) made" in resp.content.decode()
    assert fresh(old).status == "superseded"


def test_a_post_that_asks_for_nothing_or_the_model_without_one_is_refused(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert client.post(URL, {}).status_code == 400
    monkeypatch.setenv("CLAUDE_MEM_PROVIDER", "offline")
    resp = client.post(URL, {"run": "on", "mode": "model"})
    assert resp.status_code == 400 and b"model mode needs" in resp.content
    resp = client.post(URL, {"run": "on", "mode": "everything"})
    assert resp.status_code == 400


def test_the_page_is_the_owners_only(client: Client) -> None:
    from memory.runtime.credentials import OWNER_SOCKET_ENVIRON

    old, _new = _folded()
    revision = ObservationRevision.objects.get(observation=old)
    stranger = Client(**{OWNER_SOCKET_ENVIRON: False})
    assert stranger.get(URL).status_code == 403
    assert stranger.post(URL, {"undo": revision.pk}).status_code == 403
    assert fresh(old).status == "superseded"
    resp = stranger.post("/api/consolidation/run", "{}", content_type="application/json")
    assert resp.status_code == 401


# -- the API ------------------------------------------------------------------------------------
def test_api_lists_changes_and_runs_a_dry_run(client: Client) -> None:
    old, new = _folded()
    listed = client.get("/api/consolidation").json()
    assert [(c["observation"], c["action"], c["superseded_by"]) for c in listed] == [
        (old.pk, "supersede", new.pk)
    ]
    assert listed[0]["reason"] == f"duplicate of #{new.pk}" and listed[0]["undone"] is None
    sess = session()
    stale = obs(sess, "Stale row", days_ago=100)
    resp = client.post(
        "/api/consolidation/run",
        json.dumps({"dry_run": True}),
        content_type="application/json",
    )
    assert resp.status_code == 200
    data = resp.json()
    assert data["dry_run"] is True and [c["observation_id"] for c in data["changes"]] == [stale.pk]
    assert fresh(stale).demoted is False
    resp = client.post("/api/consolidation/run", json.dumps({}), content_type="application/json")
    assert resp.json()["applied"] == 1 and fresh(stale).demoted


def test_api_refuses_bad_input_with_a_reason(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_PROVIDER", "offline")
    post = lambda body: client.post(  # noqa: E731
        "/api/consolidation/run", json.dumps(body), content_type="application/json"
    )
    resp = post({"mode": "model"})
    assert resp.status_code == 400 and "model mode needs" in resp.json()["error"]
    assert post({"mode": "delete-everything"}).status_code == 422
    assert post({"dry_run": "sometimes"}).status_code == 422
    assert post({"project": "x" * 5000}).status_code == 422
    assert client.get("/api/consolidation", {"limit": 0}).status_code == 422


def test_changes_are_scoped_to_their_owner_in_team_mode(django_user_model) -> None:
    ana = django_user_model.objects.create_user("ana")
    bob = django_user_model.objects.create_user("bob")
    for user in (ana, bob):
        sess = session(owner=user)
        obs(sess, "Same finding", narrative="same", files=("c.py",), days_ago=2)
        obs(sess, "Same finding", narrative="same", files=("c.py",), days_ago=1)
    with viewer_scope(user_id=ana.pk, staff=False):
        report = consolidation_run()
        assert report.applied == 1  # only Ana's rows, folded among themselves
        from memory.curation.consolidation.recent import consolidation_changes

        assert {r.observation.session.owner_id for r in consolidation_changes()} == {ana.pk}
    assert Observation.objects.filter(session__owner=bob, status="current").count() == 2
    # The background pass (no viewer) folds each owner's rows among their own only.
    consolidation_run()
    for row in Observation.objects.filter(status="superseded").select_related(
        "superseded_by__session", "session"
    ):
        assert row.superseded_by.session.owner_id == row.session.owner_id
    assert Observation.objects.filter(status="superseded").count() == 2


def test_recorded_markup_is_shown_as_text(client: Client) -> None:
    sess = session()
    title = '<script>alert("x")</script> Checkout rounds'
    obs(sess, title, narrative="off by a cent", files=("c.py",), days_ago=2)
    obs(sess, title, narrative="off by a cent", files=("c.py",), days_ago=1)
    consolidation_run()
    body = client.get(URL).content.decode()
    assert "<script>alert" not in body
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; Checkout rounds" in body


def test_the_timeline_links_to_the_page(client: Client) -> None:
    body = client.get("/").content.decode()
    assert f'href="{URL}"' in body
