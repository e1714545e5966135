"""What memory shows the agent, and what it saves: the SessionStart index preview, a file's
observations as the read gate ranks them, and the token ledger. Thin handlers."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from django.http import HttpRequest, HttpResponse
from ninja import Query, Router, Schema, Status
from pydantic import BaseModel, Field

from memory.api import json_answer
from memory.briefing.context import context_text, utf16_len
from memory.briefing.gate import file_observations_ranked
from memory.briefing.savings import savings
from memory.briefing.savings_text import stats_json, stats_lines
from memory.ledger import ledger_report
from memory.models import estimate_tokens
from memory.runtime.foreground import foreground
from memory.services import gate_modes_list

router = Router(tags=["insights"])


class ErrorOut(Schema):
    error: str


class ContextOut(Schema):
    project: str
    text: str = Field(description="Exactly what SessionStart injects now (header time included).")
    chars: int = Field(
        description="Length as Claude Code counts it (UTF-16 units); never above 10,000."
    )
    tokens: int


# The by-file answer's models document it; the handler writes the JSON itself, since the
# validation of every row against them was a third, then a fifth, of the endpoint's CPU.
# tests/briefing/test_gate.py checks the body against these models.
class FileObservationOut(BaseModel):
    id: int
    title: str
    type: str
    created_at: datetime
    session: int
    modified: bool = Field(description="The observation modified the file (not only read it).")
    files_touched: int
    score: int = Field(description="The gate's specificity score.")
    content_hash: str = Field(description="The file's sha256 when the observation was captured.")
    status: str = Field(
        description="unchanged, changed (the file on disk now vs. then), or unknown."
    )


class ByFileOut(BaseModel):
    project: str
    path: str = Field(description="The project-relative path looked up.")
    total: int = Field(description="Observations of the file, before dedupe and limit.")
    observations: list[FileObservationOut] = Field(
        description="As the read gate shows them: one per session, most specific first."
    )


class LedgerLineOut(Schema):
    key: str
    label: str
    shown: int = Field(description="Tokens cmem put into the model's context.")
    avoided: int = Field(
        description="Tokens of reads the model did not make (a retried refusal cancels its own)."
    )
    spent: int = Field(description="API tokens the observer spent.")
    net: int = Field(description="avoided - shown - spent.")
    denials: int
    retries: int
    injections: int


class ObserverUsageOut(Schema):
    provider: str = Field(description="claude, anthropic, openrouter, gemini or openai-compatible.")
    model: str
    batches: int = Field(description="Compression batches (a request and any repair of it).")
    input: int = Field(description="Input tokens not served from the prompt cache.")
    cached: int = Field(description="Input tokens read from or written to the prompt cache.")
    output: int
    cost_usd: float = Field(description="As the provider reported it, else cmem's price table.")


class LedgerOut(Schema):
    days: int
    project: str | None
    total: LedgerLineOut
    by_day: list[LedgerLineOut]
    by_project: list[LedgerLineOut]
    by_session: list[LedgerLineOut]
    observer: list[ObserverUsageOut] = Field(
        default_factory=list, description="The observer's usage per provider and model."
    )


@router.get("/context", response={200: ContextOut, 400: ErrorOut})
def context_preview(request: HttpRequest, project: str, root: str = "") -> Status[dict[str, Any]]:
    """The SessionStart index of a project, as the agent would receive it now."""
    if not project.strip():
        return Status(400, {"error": "project must name a project"})
    # As Claude Code (the main agent) receives it, tools named for its install route.
    text = context_text(project=project, root=root, platform="claude-code")
    return Status(
        200,
        {
            "project": project,
            "text": text,
            "chars": utf16_len(text),
            "tokens": estimate_tokens(text),
        },
    )


@router.get("/observations/by-file", response={200: ByFileOut, 400: ErrorOut})
def observations_by_file(
    request: HttpRequest,
    path: str,
    project: str,
    limit: int = Query(15, ge=1, le=200),  # type: ignore[type-arg]
) -> Status[dict[str, Any]] | HttpResponse:
    """A file's observations, ranked as the read gate ranks them. `path` is project-relative,
    or absolute (made relative to the project's known roots)."""
    if not path.strip() or "\0" in path:
        return Status(400, {"error": "path must name a file"})
    with foreground():  # the agent's read gate waits on this: background work gives way
        return json_answer(by_file_body(path=path, project=project, limit=limit))


def by_file_body(*, path: str, project: str, limit: int) -> dict[str, Any]:
    """The 200 answer of /api/observations/by-file."""
    ranking = file_observations_ranked(path=path, project=project, limit=limit)
    return {
        "project": project,
        "path": ranking.path,
        "total": ranking.total,
        "observations": [
            {
                "id": c.id, "title": c.title, "type": c.type, "created_at": c.created, "session": c.session,
                "modified": c.modified, "files_touched": c.files_touched, "score": c.score,
                "content_hash": c.content_hash,
                "status": "unknown" if c.unchanged is None else ("unchanged" if c.unchanged else "changed"),
            }
            for c in ranking.rows
        ],
    }  # fmt: skip


class GateModeOut(Schema):
    project: str
    mode: str = Field(description="deny, context or off: what the read gate does there now.")
    why: str = Field(description="The setting, or the adaptive gate's evidence.")


@router.get("/gate/modes", response={200: list[GateModeOut]})
def gate_modes(request: HttpRequest, project: str = "") -> list[dict[str, str]]:
    """The read gate's mode in each project and why (CLAUDE_MEM_READ_GATE=adaptive weighs
    what the project's recent refusals led to)."""
    return [
        {"project": g.project, "mode": g.mode, "why": g.why}
        for g in gate_modes_list(project=project)
    ]


@router.get("/ledger", response={200: LedgerOut})
def ledger(
    request: HttpRequest,
    project: str | None = None,
    days: int = Query(30, ge=1, le=3650),  # type: ignore[type-arg]
) -> dict[str, Any]:
    """Net token savings per day, project and session: avoided reads minus what cmem showed
    and what the observer spent."""
    return ledger_report(project=project or None, days=days).as_dict()


class StatsReportOut(Schema):
    text: str
    report: dict[str, Any]


@router.get("/ledger/report", response={200: StatsReportOut})
def ledger_report_text(
    request: HttpRequest,
    project: str | None = None,
    days: int = Query(30, ge=1, le=3650),  # type: ignore[type-arg]
    by: Literal["day", "project", "session", "all"] = "all",
    sessions: int = Query(10, ge=0, le=1000),  # type: ignore[type-arg]
) -> dict[str, Any]:
    """`cmem stats` as the CLI prints it: the savings in money and tokens as `text`, and the
    object `cmem stats --json` prints as `report` (the fast CLI asks here)."""
    found = savings(project=project or None, days=days)
    return {
        "text": "\n".join(stats_lines(found, by=by, sessions=sessions)),
        "report": stats_json(found),
    }
