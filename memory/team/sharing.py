"""Team mode: sharing a project's memory with teammates, and a teammate's own corrections.

A share is opt-in per project: `share_grant` opens one of the owner's projects (every
session they captured in it, past and future) to the whole team or to named members;
`share_revoke` closes it again, wholly or for some members. The scoping seam
(memory/team/scope.py, `readable`) reads the shares on every request, so a revoke takes
rows out of a teammate's view at once. Sharing opens reads only: writes, corrections for
everyone and forgetting stay the author's (or staff's).

A teammate who corrects a shared row (marks it wrong, retires it, edits its text) changes
it for themselves only: a `ViewerCorrection` overlay, applied to that viewer's reads by
`overlays` and `overlaid`, and never to anyone else's.

Shared rows carry their author: `authors` names the owner of each session that is not the
viewer's, for the "by alice" of the index, search hits and API rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import QuerySet

from memory.models import Observation, ProjectShare, Session, Summary, ViewerCorrection
from memory.team import scope

PROJECT_MAX = 200
# What a teammate's correction may do to a row shared with them, as the status it shows.
OVERLAY_STATUS = {
    "wrong": Observation.Status.WRONG,
    "outdated": Observation.Status.OUTDATED,
    "retire": Observation.Status.RETIRED,
    "abandon": Observation.Status.ABANDONED,
}
OVERLAY_TEXT = ("title", "subtitle", "narrative")


class ShareError(ValueError):
    """The request is malformed or names an unknown user (HTTP 400)."""


class ShareNotFound(LookupError):
    """No such share of this user (HTTP 404)."""


def _users(usernames: Sequence[str]) -> list[Any]:
    names = [n.strip() for n in usernames if n.strip()]
    found = list(get_user_model().objects.filter(username__in=names))
    unknown = set(names) - {u.get_username() for u in found}
    if unknown:
        raise ShareError(f"no such user: {', '.join(sorted(unknown))}")
    return found


def _project(project: str) -> str:
    name = project.strip()
    if not name or len(name) > PROJECT_MAX:
        raise ShareError(f"name a project (at most {PROJECT_MAX} characters)")
    return name


def share_grant(*, owner_id: int, project: str, usernames: Sequence[str] = ()) -> ProjectShare:
    """Share `owner_id`'s `project`: with these teammates, or with everyone when none are
    named. Sharing again widens the one share of the project; it never narrows it."""
    name = _project(project)
    members = [u for u in _users(usernames) if u.pk != owner_id]
    if usernames and not members:
        raise ShareError("name teammates other than yourself (or no one: the whole team)")
    with transaction.atomic():
        share, _ = ProjectShare.objects.get_or_create(owner_id=owner_id, project=name)
        if members:
            share.members.add(*members)
        elif not share.everyone:
            share.everyone = True
            share.save(update_fields=["everyone"])
    return share


def share_revoke(
    *, owner_id: int, project: str = "", share_id: int | None = None, usernames: Sequence[str] = ()
) -> ProjectShare | None:
    """Close a share of `owner_id` (by project or id): wholly, or for the named members
    only. Returns the share left open, or None when it is gone (its last member removed).
    A share for everyone has no members to remove: narrowing it is refused, not ignored,
    so nobody believes a teammate shut out who still reads it."""
    shares = ProjectShare.objects.filter(owner_id=owner_id)
    share = (
        shares.filter(pk=share_id).first()
        if share_id is not None
        else shares.filter(project=project.strip()).first()
    )
    if share is None:
        raise ShareNotFound(f"no share of {project or f'#{share_id}'}")
    if not usernames:
        share.delete()
        return None
    if share.everyone:
        raise ShareError(
            f"{share.project} is shared with everyone: unshare it wholly, then share it with "
            "the teammates who keep it"
        )
    share.members.remove(*_users(usernames))
    if not share.everyone and not share.members.exists():
        share.delete()
        return None
    return share


def shares_visible(*, user_id: int, staff: bool = False) -> list[ProjectShare]:
    """The shares a user manages (their own), or every share for staff, oldest first."""
    rows = ProjectShare.objects.select_related("owner").prefetch_related("members")
    if not staff:
        rows = rows.filter(owner_id=user_id)
    return list(rows.order_by("created", "pk"))


def share_as_dict(share: ProjectShare) -> dict[str, Any]:
    return {
        "id": share.pk,
        "owner": share.owner.get_username(),
        "project": share.project,
        "everyone": share.everyone,
        "members": sorted(u.get_username() for u in share.members.all()),
        "created": share.created,
    }


# --- authors: who wrote a row a teammate reads ------------------------------------------


def authors(session_ids: Iterable[int | None]) -> dict[int, str]:
    """The author's username by session id, for the sessions among `session_ids` that are
    not the current viewer's own (shared rows); empty when nothing is shared with it."""
    reach = scope.readable_reach()
    wanted = {pk for pk in session_ids if pk is not None}
    if reach is None or not reach.shared or not wanted:
        return {}
    rows = (
        Session.objects.filter(pk__in=wanted)
        .exclude(owner_id=reach.user_id)
        .values_list("pk", "owner__username")
    )
    return {pk: name for pk, name in rows if name}


def row_authors(model: type[Observation] | type[Summary], ids: Iterable[int]) -> dict[int, str]:
    """The author's username by row id (observations or summaries), for shared rows only
    (see `authors`)."""
    reach = scope.readable_reach()
    wanted = set(ids)
    if reach is None or not reach.shared or not wanted:
        return {}
    rows = (
        model.objects.filter(pk__in=wanted)
        .exclude(session__owner_id=reach.user_id)
        .values_list("pk", "session__owner__username")
    )
    return {pk: name for pk, name in rows if name}


# --- a teammate's own corrections of shared rows -----------------------------------------


def may_correct(row: Observation) -> bool:
    """The current viewer may correct `row` for everyone: no scope (local, internal), staff,
    or the row's author; anyone else's correction is their overlay."""
    viewer = scope.current_viewer()
    if viewer is None or viewer.staff:
        return True
    owner = Session.objects.filter(pk=row.session_id).values_list("owner_id", flat=True).first()
    return owner == viewer.user_id


def overlay_mark(row: Observation, *, action: str, reason: str = "") -> ViewerCorrection | None:
    """The current viewer's mark on a row shared with them (OVERLAY_STATUS), or `restore`
    to drop their mark (their own text stays). Returns the overlay, None once nothing of it
    is left."""
    viewer = scope.current_viewer()
    assert viewer is not None  # only a teammate's token reaches here (may_correct)
    if action == "restore":
        found = ViewerCorrection.objects.filter(user_id=viewer.user_id, observation=row).first()
        if found is None or not any(getattr(found, name) for name in OVERLAY_TEXT):
            ViewerCorrection.objects.filter(user_id=viewer.user_id, observation=row).delete()
            return None
        found.status, found.reason = Observation.Status.CURRENT, ""
        found.save(update_fields=["status", "reason"])
        return found
    overlay, _ = ViewerCorrection.objects.get_or_create(user_id=viewer.user_id, observation=row)
    overlay.status, overlay.reason = OVERLAY_STATUS[action], reason
    overlay.save(update_fields=["status", "reason"])
    return overlay


def overlay_edit(
    row: Observation, *, changes: dict[str, str], reason: str = ""
) -> ViewerCorrection:
    """The current viewer's own text for a row shared with them (`changes`: already
    cleaned, OVERLAY_TEXT fields only)."""
    viewer = scope.current_viewer()
    assert viewer is not None  # only a teammate's token reaches here (may_correct)
    overlay, _ = ViewerCorrection.objects.get_or_create(user_id=viewer.user_id, observation=row)
    for name, value in changes.items():
        setattr(overlay, name, value)
    overlay.reason = reason or overlay.reason
    overlay.save()
    return overlay


def _overlaid_viewer() -> int | None:
    """The viewer whose overlays apply, or None: no restricted viewer (staff and the author
    correct the row itself), or nothing shared with it (an overlay only covers shared rows,
    so a viewer without shares pays no query for them)."""
    reach = scope.readable_reach()
    return reach.user_id if reach is not None and reach.shared else None


def overlays(obs_ids: Iterable[int]) -> dict[int, ViewerCorrection]:
    """The current viewer's overlays of these rows, by observation id."""
    viewer = _overlaid_viewer()
    wanted = set(obs_ids)
    if viewer is None or not wanted:
        return {}
    rows = ViewerCorrection.objects.filter(user_id=viewer, observation_id__in=wanted)
    return {row.observation_id: row for row in rows}


def without_overlaid(rows: QuerySet[Observation]) -> QuerySet[Observation]:
    """`rows` less those the current viewer marked no longer current in their overlay."""
    viewer = _overlaid_viewer()
    if viewer is None:
        return rows
    marked = ViewerCorrection.objects.filter(user_id=viewer).exclude(
        status=Observation.Status.CURRENT
    )
    return rows.exclude(pk__in=marked.values("observation_id"))


def overlaid(row: dict[str, Any], overlay: ViewerCorrection | None) -> dict[str, Any]:
    """An observation as a dict (`as_dict` keys) as this viewer sees it under `overlay`."""
    if overlay is None:
        return row
    shown = {**row}
    if overlay.status != Observation.Status.CURRENT:  # an edit alone keeps the row's status
        shown["status"], shown["status_reason"] = overlay.status, overlay.reason
    for name in OVERLAY_TEXT:
        if getattr(overlay, name):
            shown[name] = getattr(overlay, name)
    shown["viewer_corrected"] = True
    return shown
