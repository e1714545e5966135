"""Team mode: the consolidation pass on PostgreSQL folds each user's duplicates among that
user's own rows only, and never touches a row a person wrote (issue 31)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from memory.curation.consolidation.run import consolidation_run
from memory.models import Observation, ObservationFile, Session

pytestmark = [pytest.mark.django_db, pytest.mark.team]

TITLE = "Rate limiter allows a burst of 20 requests"


def _rows(owner: object, n: int, **fields: object) -> list[Observation]:
    now = timezone.now()
    out = []
    for i in range(n):
        session = Session.objects.create(
            session_id=f"{owner}-{i}-{fields.get('origin', '')}", project="shop", owner=owner
        )
        row = Observation.objects.create(
            session=session,
            project="shop",
            title=TITLE,
            narrative="The token bucket allows a burst of 20 requests.",
            files_modified=["lib/ratelimit.py"],
            created=now - timedelta(days=10 - i),
            **fields,
        )
        ObservationFile.objects.create(
            observation=row, project="shop", path="lib/ratelimit.py", role="modified"
        )
        out.append(row)
    return out


def test_each_users_duplicates_fold_among_their_own_rows(pg_backend: None) -> None:
    users = [get_user_model().objects.create(username=name) for name in ("alice", "bob")]
    alice, bob = (_rows(user, 3) for user in users)
    # Bob also wrote the same memory himself: his copies fold into it, and it is not touched.
    (mine,) = _rows(users[1], 1, origin="user", person_edited=True)
    report = consolidation_run(mode="rules")
    assert not report.dry_run
    rows = {row.pk: row for row in Observation.objects.select_related("session")}
    kept = [pk for pk in (r.pk for r in alice) if rows[pk].is_current]
    assert len(kept) == 1
    assert all(rows[r.pk].superseded_by_id == kept[0] for r in alice if r.pk != kept[0])
    assert all(rows[r.pk].superseded_by_id == mine.pk for r in bob)
    for row in rows.values():
        if row.superseded_by_id:  # never folded into a teammate's row
            assert rows[row.superseded_by_id].session.owner_id == row.session.owner_id
    assert rows[mine.pk].is_current and not rows[mine.pk].revisions.exists()
