"""Team mode: remembered and corrected memories belong to their user (issue 31).

Two halves. The tests below run in process on the PostgreSQL test database
(CMEM_TEST_DATABASE_URL, as `make test` sets it) with real tokens through the API: a
teammate gets 404 for another user's rows on every curation endpoint and changes nothing;
a staff member's correction is attributed to them; a remembered row is its writer's. The
`check_*` functions are the same promises on the shared server of test_isolation.py (real
`cmem serve`, PostgreSQL, Redis, real HTTP): its ATTACKS table runs them.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from memory.models import Observation, ObservationRevision, Session
from memory.team.tokens import token_create
from tests.team.isolation_world import PROJECT, World

pytestmark = [pytest.mark.django_db, pytest.mark.team]


class Team:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.tokens: dict[str, str] = {}
        self.ids: dict[str, int] = {}

    def call(self, user: str, method: str, path: str, body: dict[str, Any] | None = None):  # type: ignore[no-untyped-def]
        headers = {"Authorization": f"Bearer {self.tokens[user]}"}
        send = getattr(self.client, method.lower())
        if method == "GET":
            return send(path, headers=headers)
        return send(path, data=body or {}, content_type="application/json", headers=headers)


@pytest.fixture
def team(pg_backend: None, monkeypatch: pytest.MonkeyPatch) -> Team:
    """Alice and Bob share a project, Sam is staff; Alice has an observed row and a
    remembered one (with its revision)."""
    monkeypatch.setenv("CLAUDE_MEM_REQUIRE_TOKEN", "true")
    world = Team(Client(enforce_csrf_checks=True))
    users = {}
    for name in ("alice", "bob", "sam"):
        users[name] = get_user_model().objects.create(username=name, is_staff=name == "sam")
        world.tokens[name] = token_create(user=users[name])[1]
    session = Session.objects.create(session_id="alice-1", project=PROJECT, owner=users["alice"])
    world.ids["observed"] = Observation.objects.create(
        session=session, project=PROJECT, title="Ledger totals settle nightly"
    ).pk
    reply = world.call(
        "alice",
        "POST",
        "/api/memories",
        {"project": PROJECT, "title": "Use cents", "topic": "money"},
    )
    assert reply.status_code == 201, reply.content
    world.ids["remembered"] = reply.json()["observation"]["id"]
    world.ids["revision"] = ObservationRevision.objects.get(
        observation_id=world.ids["remembered"]
    ).pk
    return world


def _alices() -> list[tuple[Any, ...]]:
    return list(
        Observation.objects.filter(session__owner__username="alice").order_by("pk").values_list(
            "pk", "title", "status", "pinned", "superseded_by", "person_edited", "facts",
        )
    )  # fmt: skip


def test_a_teammate_gets_404_for_another_users_rows_and_changes_nothing(team: Team) -> None:
    before, revisions = _alices(), ObservationRevision.objects.count()
    for pk in (team.ids["observed"], team.ids["remembered"]):
        for body in (
            {"action": "retire"}, {"action": "pin"}, {"action": "wrong", "reason": "mine now"},
            {"action": "supersede", "superseded_by": team.ids["observed"]},
        ):  # fmt: skip
            reply = team.call("bob", "POST", f"/api/observations/{pk}/mark", body)
            assert reply.status_code == 404 and reply.json() == {"error": f"no observation #{pk}"}
        reply = team.call("bob", "PATCH", f"/api/observations/{pk}", {"title": "Bob's now"})
        assert reply.status_code == 404
        reply = team.call("bob", "GET", f"/api/observations/{pk}/history")
        assert reply.status_code == 404 and "Use cents" not in reply.content.decode()
    reply = team.call("bob", "POST", f"/api/revisions/{team.ids['revision']}/undo")
    assert reply.status_code == 404 and reply.json() == {
        "error": f"no revision #{team.ids['revision']}"
    }
    assert (_alices(), ObservationRevision.objects.count()) == (before, revisions)


def test_a_teammate_cannot_point_his_memory_at_hers(team: Team) -> None:
    """superseded_by naming another user's row is refused as an unknown id."""
    mine = team.call("bob", "POST", "/api/memories", {"project": PROJECT, "title": "Bob's"}).json()
    reply = team.call(
        "bob", "POST", f"/api/observations/{mine['observation']['id']}/mark",
        {"action": "supersede", "superseded_by": team.ids["remembered"]},
    )  # fmt: skip
    assert (
        reply.status_code == 400
        and f"no observation #{team.ids['remembered']}" in reply.json()["error"]
    )
    assert Observation.objects.get(pk=mine["observation"]["id"]).status == "current"


def test_remembered_rows_belong_to_their_user_and_a_topic_is_each_users_own(team: Team) -> None:
    reply = team.call(
        "bob",
        "POST",
        "/api/memories",
        {"project": PROJECT, "title": "Use floats", "topic": "money"},
    )
    assert reply.status_code == 201
    body = reply.json()
    assert body["superseded"] is None  # Alice's `money` is hers: Bob's is another memory
    bobs = Observation.objects.select_related("session__owner").get(pk=body["observation"]["id"])
    assert bobs.session.owner.username == "bob"
    assert bobs.revisions.get().user.username == "bob"  # type: ignore[union-attr]
    alices = Observation.objects.select_related("session__owner").get(pk=team.ids["remembered"])
    assert alices.status == "current" and alices.session.owner.username == "alice"
    # Staff read every row, yet their topic never replaces a teammate's either.
    reply = team.call(
        "sam",
        "POST",
        "/api/memories",
        {"project": PROJECT, "title": "Use decimals", "topic": "money"},
    )
    assert reply.status_code == 201 and reply.json()["superseded"] is None
    assert Observation.objects.filter(topic="money", status="current").count() == 3


def test_a_staff_correction_is_attributed_to_the_staff_user(team: Team) -> None:
    pk = team.ids["observed"]
    reply = team.call(
        "sam",
        "POST",
        f"/api/observations/{pk}/mark",
        {"action": "wrong", "reason": "settles hourly"},
    )
    assert reply.status_code == 200 and reply.json()["observation"]["status"] == "wrong"
    edit = team.call("sam", "PATCH", f"/api/observations/{pk}", {"facts": ["hourly since March"]})
    assert edit.status_code == 200
    history = team.call("alice", "GET", f"/api/observations/{pk}/history").json()["revisions"]
    assert [(r["action"], r["actor"], r["user"]) for r in history] == [
        ("wrong", "user", "sam"), ("edit", "user", "sam"),
    ]  # fmt: skip
    # The row is still Alice's; she may undo the staff change herself.
    undo = team.call("alice", "POST", f"/api/revisions/{history[0]['id']}/undo")
    assert undo.status_code == 200 and undo.json()["observation"]["status"] == "current"
    assert Observation.objects.get(pk=pk).session.owner.username == "alice"  # type: ignore[union-attr]


# --- the same promises on the real shared server (test_isolation.py's ATTACKS) -------------


def _alice_state(world: World) -> list[tuple[Any, ...]]:
    return world.sql(
        "SELECT o.id, o.title, o.narrative, o.status, o.pinned, o.superseded_by_id, o.person_edited,"
        " (SELECT count(*) FROM memory_observationrevision r WHERE r.observation_id = o.id)"
        " FROM memory_observation o JOIN memory_session s ON s.id = o.session_id"
        " WHERE s.owner_id = %s ORDER BY o.id",
        (world.user_id("alice"),),
    )


def check_remember(world: World) -> None:
    mine = world.call(
        "alice",
        "POST",
        "/api/memories",
        body={"project": PROJECT, "title": "Totals in cents", "topic": "iso-money"},
    )
    assert mine.status == 201, mine.text
    before = _alice_state(world)
    bobs = world.call(
        "bob",
        "POST",
        "/api/memories",
        body={"project": PROJECT, "title": "Totals in floats", "topic": "iso-money"},
    )
    assert bobs.status == 201 and bobs.json()["superseded"] is None, bobs.text
    assert "Totals in cents" not in bobs.text
    owner = world.sql(
        "SELECT s.owner_id FROM memory_observation o JOIN memory_session s ON s.id = o.session_id WHERE o.id = %s",
        (bobs.json()["observation"]["id"],),
    )
    assert owner == [(world.user_id("bob"),)]
    assert _alice_state(world) == before


def check_mark(world: World) -> None:
    alice = world.rows["alice"]
    before = _alice_state(world)
    for pk in alice.observations:
        for body in ({"action": "retire"}, {"action": "pin"}, {"action": "wrong", "reason": "x"}):
            reply = world.call("bob", "POST", f"/api/observations/{pk}/mark", body=body)
            assert reply.status == 404 and reply.json() == {"error": f"no observation #{pk}"}
    assert _alice_state(world) == before
    # Staff may: attributed to them, and undone again so the world stays as it was.
    pk = alice.observations[0]
    staff = world.call("sam", "POST", f"/api/observations/{pk}/mark", body={"action": "pin"})
    assert staff.status == 200 and staff.json()["changed"], staff.text
    revision = staff.json()["revision"]
    assert world.sql(
        "SELECT u.username FROM memory_observationrevision r JOIN auth_user u ON u.id = r.user_id WHERE r.id = %s",
        (revision,),
    ) == [("sam",)]
    assert world.call("sam", "POST", f"/api/revisions/{revision}/undo").status == 200


def check_edit(world: World) -> None:
    before = _alice_state(world)
    for pk in world.rows["alice"].observations:
        reply = world.call(
            "bob",
            "PATCH",
            f"/api/observations/{pk}",
            body={"title": "Bob was here", "redact": True},
        )
        assert reply.status == 404 and reply.json() == {"error": f"no observation #{pk}"}
    assert _alice_state(world) == before


def check_history(world: World) -> None:
    for pk in world.rows["alice"].observations:
        reply = world.call("bob", "GET", f"/api/observations/{pk}/history")
        assert reply.status == 404 and reply.json() == {"error": f"no observation #{pk}"}
        assert world.call("sam", "GET", f"/api/observations/{pk}/history").status == 200


def check_undo(world: World) -> None:
    pk = world.rows["alice"].observations[0]
    own = world.call(
        "alice",
        "POST",
        f"/api/observations/{pk}/mark",
        body={"action": "outdated", "reason": "iso"},
    )
    assert own.status == 200, own.text
    revision = own.json()["revision"]
    before = _alice_state(world)
    reply = world.call("bob", "POST", f"/api/revisions/{revision}/undo")
    assert reply.status == 404 and reply.json() == {"error": f"no revision #{revision}"}
    assert _alice_state(world) == before
    assert world.call("alice", "POST", f"/api/revisions/{revision}/undo").status == 200


def check_consolidation(world: World) -> None:
    """A teammate's pass plans and lists only their own rows; alice's stay as they were."""
    alice_ids = set(world.rows["alice"].observations)
    before = _alice_state(world)
    run = world.call("bob", "POST", "/api/consolidation/run", body={"dry_run": True})
    assert run.status == 200, run.text
    assert not alice_ids & {c["observation_id"] for c in run.json()["changes"]}
    listed = world.call("bob", "GET", "/api/consolidation")
    assert listed.status == 200, listed.text
    assert not alice_ids & {c["observation"] for c in listed.json()}
    assert _alice_state(world) == before


CURATION_ATTACKS = {
    ("GET", "/api/consolidation"): check_consolidation,
    ("POST", "/api/consolidation/run"): check_consolidation,
    ("POST", "/api/memories"): check_remember,
    ("POST", "/api/observations/{obs_id}/mark"): check_mark,
    ("PATCH", "/api/observations/{obs_id}"): check_edit,
    ("GET", "/api/observations/{obs_id}/history"): check_history,
    ("POST", "/api/revisions/{revision_id}/undo"): check_undo,
}
