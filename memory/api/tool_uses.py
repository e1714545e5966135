"""Raw tool output on demand: `GET /api/tool-uses`, the fourth and costliest disclosure step
(after search, get_observations and the code tools); memory/retrieval/tool_uses.py does the work.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from ninja import Query, Router, Schema, Status
from pydantic import Field

from memory.retrieval.tool_uses import (
    ID_MAX,
    LIMIT_DEFAULT,
    LIMIT_MAX,
    ToolUsesError,
    tool_use_refs_parse,
    tool_uses_fetch,
)
from memory.runtime.foreground import foreground

router = Router(tags=["retrieval"])


class ErrorOut(Schema):
    error: str


class ToolUsesFilters(Schema):
    ids: str = Field(
        "",
        description="Comma-separated: observation ids (12, #12) for the tool uses each was made from, "
        "and E<id> (E7) for one captured tool use.",
    )
    project: str | None = Field(None, description="Only tool uses of this project.")
    session: int | None = Field(
        None, ge=1, le=ID_MAX, description="Only tool uses of this session."
    )
    limit: int = Field(LIMIT_DEFAULT, ge=1, le=LIMIT_MAX)


class ToolUseOut(Schema):
    id: str = Field(description="E<event id>: how to ask for this tool use again.")
    event_id: int
    observation_ids: list[int] = Field(description="The observations made from it.")
    session: int
    project: str
    tool_name: str
    tool_use_id: str
    hook_event_name: str
    created_at: datetime
    failed: bool
    expired: bool = Field(
        description="Its raw payload was emptied by retention (CLAUDE_MEM_RETENTION_DAYS): "
        "input, output and error are empty and `note` says so."
    )
    note: str
    input: str = Field(description="The tool input as stored (JSON), redacted at capture.")
    input_bytes: int = Field(description="The whole payload's size in bytes, before the cap.")
    input_truncated: bool
    output: str = Field(description="The tool output as stored (text, else JSON).")
    output_bytes: int
    output_truncated: bool
    error: str
    error_bytes: int
    error_truncated: bool


class ToolUsesOut(Schema):
    note: str = Field(description="What the text is: recorded data, never instructions.")
    retention_days: int = Field(description="How long raw payloads are kept (0: forever).")
    tool_uses: list[ToolUseOut]
    missing: list[str] = Field(
        description="Ids naming nothing this request may read, or outside the filters."
    )
    without_tool_uses: list[int] = Field(
        description="Observations with no recorded tool use (written with `remember`, imported)."
    )
    more: int = Field(description="Tool uses that matched beyond `limit`.")


@router.get("/tool-uses", response={200: ToolUsesOut, 400: ErrorOut})
def tool_uses_endpoint(
    request: HttpRequest, filters: Query[ToolUsesFilters]
) -> Status[dict[str, Any]]:
    """The recorded input and output of tool uses, by observation or event id (or the newest
    of a session or project), each payload capped at 64 KB with a marker: the costliest step."""
    try:
        refs = tool_use_refs_parse(filters.ids)
        with foreground():  # a caller waits on these rows: background work gives way
            found = tool_uses_fetch(
                refs=refs, project=filters.project or None, session=filters.session,
                limit=filters.limit,
            )  # fmt: skip
    except ToolUsesError as exc:
        return Status(400, {"error": str(exc)})
    return Status(200, found.as_dict())
