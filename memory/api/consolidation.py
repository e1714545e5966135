"""The consolidation pass over HTTP: what it changed (each change undone through
`/api/revisions/{id}/undo`), and a run on demand. Thin handlers over
memory/curation/consolidation/."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.http import HttpRequest
from ninja import Query, Router, Schema, Status
from pydantic import Field

from memory.curation.consolidation.recent import LIMIT_MAX, consolidation_changes
from memory.curation.consolidation.run import ConsolidationError, consolidation_run

router = Router(tags=["consolidation"])


class ErrorOut(Schema):
    error: str


class ChangeOut(Schema):
    revision: int = Field(description="Undo it with POST /api/revisions/{revision}/undo.")
    batch: str = Field(description="The pass that made it.")
    observation: int
    title: str
    action: str = Field(description="supersede, abandon or demote (or undo).")
    reason: str
    superseded_by: int | None
    created: datetime
    undone: datetime | None


class RunIn(Schema):
    dry_run: bool = Field(False, description="Only say what it would do: change nothing.")
    project: str = Field("", max_length=200, description="Only this project (default: all).")
    mode: Literal["rules", "model"] | None = Field(
        None, description="Default: CLAUDE_MEM_CONSOLIDATE (auto: the model when there is one)."
    )


class PlannedOut(Schema):
    observation_id: int
    action: str
    reason: str
    title: str
    project: str
    superseded_by: int | None
    source: str = Field(description="rules or model.")


class RunOut(Schema):
    batch: str
    mode: str
    dry_run: bool
    changes: list[PlannedOut]
    applied: int
    skipped: int
    ignored: int = Field(description="Model proposals the strict parser dropped.")
    requests: int
    tokens: int
    cost_usd: float
    groups: int
    groups_left: int
    estimated_tokens: int
    notes: list[str]
    summary: str


@router.get("/consolidation", response={200: list[ChangeOut]})
def consolidation_list(
    request: HttpRequest,
    limit: int = Query(100, ge=1, le=LIMIT_MAX),  # type: ignore[type-arg]
    batch: str = Query("", max_length=32),  # type: ignore[type-arg]
) -> list[dict[str, Any]]:
    """The consolidation pass's changes, newest first, each with its reason."""
    return [
        {
            "revision": r.pk, "batch": r.batch, "observation": r.observation_id,
            "title": r.observation.title, "action": r.action, "reason": r.reason,
            "superseded_by": r.after.get("superseded_by_id"), "created": r.created,
            "undone": r.undone,
        }
        for r in consolidation_changes(limit=limit, batch=batch)
    ]  # fmt: skip


@router.post("/consolidation/run", response={200: RunOut, 400: ErrorOut})
def consolidation_run_now(request: HttpRequest, payload: RunIn) -> Status[dict[str, Any]]:
    """Run the pass now over the caller's rows (dry_run: only plan it)."""
    try:
        report = consolidation_run(
            project=payload.project.strip() or None, mode=payload.mode, dry_run=payload.dry_run
        )
    except ConsolidationError as exc:
        return Status(400, {"error": str(exc)})
    return Status(200, {**report.as_dict(), "summary": report.summary()})
