"""Team sharing in-process, on whichever database the suite runs (SQLite by default,
PostgreSQL under CMEM_TEST_DATABASE_URL): the scoping seam's `readable`, the search
backends' session scoping, the overlay of a member's corrections, the services' rules and
the server-side commands (`cmem share/unshare/shares --user`). The real-server proof over
HTTP is tests/team/test_sharing.py."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.curation import corrections
from memory.curation.policy import CurationDenied, CurationNotFound
from memory.models import Observation, ProjectShare, Session, ViewerCorrection
from memory.retrieval.search.query import SearchQuery
from memory.retrieval.search.service import search
from memory.retrieval.timeline import timeline_build
from memory.team import scope
from memory.team.scope import viewer_scope
from memory.team.sharing import ShareError, share_grant, share_revoke
from tests.factories import SessionFactory

pytestmark = [pytest.mark.django_db]

P, Q = "github.com/acme/shop", "github.com/alice/diary"


@pytest.fixture
def team() -> dict[str, Any]:
    users = get_user_model().objects
    alice, bob, carol = (users.create_user(n) for n in ("alice", "bob", "carol"))
    rows = {}
    for owner, project, title in (
        (alice, P, "Quokka totals settle nightly"),
        (alice, Q, "Quokka diary entry"),
        (bob, P, "Bob's own quokka note"),
    ):
        session = SessionFactory(project=project, session_id=f"{owner}-{project}", owner=owner)
        rows[(owner.username, project)] = Observation.objects.create(
            session=session, project=project, title=title, narrative="quokka detail"
        )
    return {"alice": alice, "bob": bob, "carol": carol, "rows": rows}


def _found(user: Any, **query: Any) -> dict[int, str]:
    """{observation id: author} of a keyword search for `quokka` as `user`."""
    with viewer_scope(user_id=user.pk, staff=False):
        hits = search(SearchQuery(text="quokka", kinds=("observation",), **query))
    return {h.id: h.author for h in hits}


def test_a_share_opens_the_project_to_its_members_only(team: dict[str, Any]) -> None:
    alice, bob, carol, rows = team["alice"], team["bob"], team["carol"], team["rows"]
    p_row, q_row, bobs = rows[("alice", P)], rows[("alice", Q)], rows[("bob", P)]
    assert _found(bob) == {bobs.pk: ""}  # nothing shared yet
    share_grant(owner_id=alice.pk, project=P, usernames=["bob"])
    assert _found(bob) == {bobs.pk: "", p_row.pk: "alice"}
    assert _found(bob, project=Q) == {}
    assert _found(carol) == {}
    with viewer_scope(user_id=bob.pk, staff=False):
        readable = set(scope.readable(Observation.objects.all()).values_list("pk", flat=True))
        owned = set(scope.owned(Observation.objects.all()).values_list("pk", flat=True))
        anchor = timeline_build(anchor=str(p_row.pk)).anchor
    assert readable == {bobs.pk, p_row.pk} and owned == {bobs.pk}
    assert anchor.author == "alice"
    assert q_row.pk not in readable
    # Alice still reads her own rows only: Bob shared nothing.
    assert set(_found(alice)) == {p_row.pk, q_row.pk}
    # For everyone: Carol too; revoked: nobody.
    share_grant(owner_id=alice.pk, project=P)
    assert _found(carol) == {p_row.pk: "alice"}
    share_revoke(owner_id=alice.pk, project=P)
    assert _found(bob) == {bobs.pk: ""} and _found(carol) == {}


def test_sharing_rules(team: dict[str, Any]) -> None:
    alice = team["alice"]
    with pytest.raises(ShareError, match="no such user"):
        share_grant(owner_id=alice.pk, project=P, usernames=["nobody"])
    with pytest.raises(ShareError, match="other than yourself"):
        share_grant(owner_id=alice.pk, project=P, usernames=["alice"])
    with pytest.raises(ShareError, match="name a project"):
        share_grant(owner_id=alice.pk, project="  ")
    share = share_grant(owner_id=alice.pk, project=P, usernames=["bob"])
    assert share_grant(owner_id=alice.pk, project=P, usernames=["carol"]).pk == share.pk
    assert sorted(share.members.values_list("username", flat=True)) == ["bob", "carol"]
    assert share_revoke(owner_id=alice.pk, project=P, usernames=["bob"]) is not None
    # The last member gone: the share is gone.
    assert share_revoke(owner_id=alice.pk, project=P, usernames=["carol"]) is None
    assert not ProjectShare.objects.exists()
    # A share for everyone cannot be narrowed by name: that would shut no one out.
    share_grant(owner_id=alice.pk, project=P)
    with pytest.raises(ShareError, match="shared with everyone"):
        share_revoke(owner_id=alice.pk, project=P, usernames=["bob"])
    assert ProjectShare.objects.get().everyone


def test_a_members_correction_is_their_own_the_authors_is_everyones(
    team: dict[str, Any],
) -> None:
    alice, bob, carol, rows = team["alice"], team["bob"], team["carol"], team["rows"]
    row = rows[("alice", P)]
    share_grant(owner_id=alice.pk, project=P)
    with viewer_scope(user_id=bob.pk, staff=False):
        shown = corrections.observation_mark(row.pk, action="wrong", actor="user", reason="no")
        assert shown.status == "wrong"
        corrections.observation_edit(row.pk, changes={"title": "Bob's words"}, actor="user")
        with pytest.raises(CurationDenied):
            corrections.observation_mark(row.pk, action="pin", actor="user")
        with pytest.raises(CurationDenied):
            corrections.observation_edit(row.pk, changes={"facts": ["x"]}, actor="user")
    row.refresh_from_db()
    assert (row.status, row.title, row.pinned) == ("current", "Quokka totals settle nightly", False)
    assert ViewerCorrection.objects.get().user == bob
    assert row.pk not in _found(bob)  # marked wrong for him
    assert row.pk in _found(carol) and row.pk in _found(alice)
    with viewer_scope(user_id=bob.pk, staff=False):
        everything = search(SearchQuery(text="quokka", kinds=("observation",), status="all"))
        mine = [h for h in everything if h.id == row.pk]
        assert [(h.status, h.title) for h in mine] == [("wrong", "Bob's words")]
        corrections.observation_mark(row.pk, action="restore", actor="user")
    assert row.pk in _found(bob)
    # The author's correction changes the row: every member sees it.
    with viewer_scope(user_id=alice.pk, staff=False):
        corrections.observation_mark(row.pk, action="outdated", actor="user")
    assert row.pk not in _found(bob) and row.pk not in _found(carol)
    # A user the row is not shared with cannot reach it to correct it.
    share_revoke(owner_id=alice.pk, project=P)
    with viewer_scope(user_id=carol.pk, staff=False), pytest.raises(CurationNotFound):
        corrections.observation_mark(row.pk, action="wrong", actor="user", reason="x")


def test_the_server_side_commands(team: dict[str, Any]) -> None:
    def cmem(*args: str) -> str:
        out = StringIO()
        call_command(*args, stdout=out)
        return out.getvalue()

    assert "shared with bob, carol" in cmem("share", P, "--with", "bob,carol", "--user", "alice")
    assert f"#{ProjectShare.objects.get().pk} {P} of alice" in cmem("shares")
    assert cmem("shares", "--user", "bob").startswith("no shares")
    assert "Narrowed" in cmem("unshare", P, "--with", "carol", "--user", "alice")
    assert "no teammate reads it" in cmem("unshare", P, "--user", "alice")
    with pytest.raises(CommandError, match="--user"):
        cmem("share", P)
    with pytest.raises(CommandError, match="no share"):
        cmem("unshare", P, "--user", "alice")
    assert Session.objects.count() == 3  # sharing never touches the rows themselves
