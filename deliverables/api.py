"""Deliverables over HTTP: list what the agent made, newest first (downloads are pages)."""

from __future__ import annotations

from datetime import datetime

from django.http import HttpRequest
from ninja import Query, Router, Schema

from deliverables.models import Deliverable

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
    download_url: str


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
    rows = Deliverable.objects.select_related("prompt").order_by("-created", "-pk")
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
            }
            for d in rows[: max(1, min(limit, LIMIT_MAX))]
        ]
    }
