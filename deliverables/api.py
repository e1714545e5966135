"""Deliverables over HTTP: list what the agent made, newest first (downloads are pages)."""

from __future__ import annotations

from datetime import datetime

from django.http import FileResponse, HttpRequest
from ninja import Path, Query, Router, Schema
from pydantic import Field

from deliverables.models import Deliverable
from deliverables.views import download_response
from memory.team import scope

router = Router(tags=["deliverables"])
LIMIT_MAX = 200


class DeliverableOut(Schema):
    id: int
    name: str
    project: str
    session: int
    prompt: int | None
    prompt_number: int | None
    original_path: str
    size: int
    sha256: str
    content_type: str
    # Attached by the agent with the work_state_write MCP tool, with the call's title/note.
    attached: bool
    title: str
    note: str
    created_at: datetime
    download_url: str = Field(description="The page (a staff login in team mode).")
    api_download_url: str = Field(description="The same bytes for an API token.")


class DeliverablesOut(Schema):
    deliverables: list[DeliverableOut]


@router.get("/deliverables", response=DeliverablesOut)
def deliverables_list(
    request: HttpRequest,
    project: str | None = None,
    # Bounded to SQLite's INTEGER: a larger id is a 422, not a 500 (schemathesis found it).
    session: int | None = Query(None, ge=0, le=2**63 - 1),
    limit: int = 50,
) -> dict[str, object]:
    """Deliverables, newest first; `project` and `session` (its id) narrow the list."""
    # A teammate's token lists only their own (memory/team/scope.py).
    rows = scope.owned(Deliverable.objects.select_related("prompt")).order_by("-created", "-pk")
    if project:
        rows = rows.filter(project=project)
    if session is not None:
        rows = rows.filter(session_id=session)
    return {
        "deliverables": [
            {
                "id": d.pk,
                "name": d.name,
                "project": d.project,
                "session": d.session_id,
                "prompt": d.prompt_id,
                "prompt_number": d.prompt.number if d.prompt else None,
                "original_path": d.original_path,
                "size": d.size,
                "sha256": d.sha256,
                "content_type": d.content_type,
                "attached": d.attached,
                "title": d.title,
                "note": d.note,
                "created_at": d.created,
                "download_url": request.build_absolute_uri(d.get_absolute_url()),
                "api_download_url": request.build_absolute_uri(
                    f"/api/deliverables/{d.pk}/download"
                ),
            }
            for d in rows[: max(1, min(limit, LIMIT_MAX))]
        ]
    }


@router.get("/deliverables/{pk}/download")
def deliverable_download(
    request: HttpRequest,
    pk: int = Path(..., ge=1, le=2**63 - 1),  # type: ignore[type-arg]
) -> FileResponse:
    """The stored bytes as an attachment (404 for an id this token may not read)."""
    return download_response(pk)
