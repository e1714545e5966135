"""Team mode: sharing a project's memory with teammates (memory/team/sharing.py).

A user manages their own shares only: listing, sharing and revoking act on the token's
user. Staff list every share (to see what is open), but revoke only their own. Sharing is
per user, so a call without a token (the local single-user worker) shares nothing: 400.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema, Status
from pydantic import Field

from memory.team.scope import current_viewer
from memory.team.sharing import (
    ShareError,
    ShareNotFound,
    share_as_dict,
    share_grant,
    share_revoke,
    shares_visible,
)

router = Router(tags=["sharing"])

NO_USER = "sharing is per user: call with your API token (team mode)"


class ErrorOut(Schema):
    error: str


class ShareOut(Schema):
    id: int
    owner: str = Field(description="The user whose project it is.")
    project: str
    everyone: bool = Field(description="Shared with the whole team.")
    members: list[str] = Field(description="The teammates it is shared with (if not everyone).")
    created: datetime


class SharesOut(Schema):
    shares: list[ShareOut]


class ShareIn(Schema):
    project: str = Field(description="One of your projects, as cmem names it.")
    members: list[str] = Field(
        default_factory=list,
        description="Usernames to share with; none: the whole team.",
    )


@router.get("/shares", response={200: SharesOut})
def shares_endpoint(request: HttpRequest, mine: bool = False) -> Status[dict[str, Any]]:
    """Your shares (staff: every share unless `mine`; without a token: every share)."""
    viewer = current_viewer()
    if viewer is None:
        rows = shares_visible(user_id=0, staff=True)
    else:
        rows = shares_visible(user_id=viewer.user_id, staff=viewer.staff and not mine)
    return Status(200, {"shares": [share_as_dict(s) for s in rows]})


@router.post("/shares", response={201: ShareOut, 400: ErrorOut})
def share_endpoint(request: HttpRequest, payload: ShareIn) -> Status[dict[str, Any]]:
    """Share one of your projects with named teammates, or with everyone."""
    viewer = current_viewer()
    if viewer is None:
        return Status(400, {"error": NO_USER})
    try:
        share = share_grant(
            owner_id=viewer.user_id, project=payload.project, usernames=payload.members
        )
    except ShareError as exc:
        return Status(400, {"error": str(exc)})
    return Status(201, share_as_dict(share))


class RevokeOut(Schema):
    revoked: bool = Field(description="The share is gone (else it is narrowed: `share`).")
    share: ShareOut | None = None


@router.delete("/shares/{share_id}", response={200: RevokeOut, 400: ErrorOut, 404: ErrorOut})
def unshare_endpoint(
    request: HttpRequest, share_id: int, members: str = ""
) -> Status[dict[str, Any]]:
    """Revoke one of your shares: wholly, or for `members` (comma-separated) only."""
    viewer = current_viewer()
    if viewer is None:
        return Status(400, {"error": NO_USER})
    names = [name for name in members.split(",") if name.strip()]
    try:
        left = share_revoke(owner_id=viewer.user_id, share_id=share_id, usernames=names)
    except ShareNotFound as exc:
        return Status(404, {"error": str(exc)})
    except ShareError as exc:
        return Status(400, {"error": str(exc)})
    return Status(200, {"revoked": left is None, "share": share_as_dict(left) if left else None})
