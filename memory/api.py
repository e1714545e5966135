"""Core API: health, stats and the hook endpoint (thin handlers; logic in services)."""

from __future__ import annotations

import os
from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema, Status

from memory import config
from memory.hooks import hook_handle
from memory.platforms.base import HookInputError
from memory.services import stats_compute

router = Router(tags=["memory"])


class HealthOut(Schema):
    status: str
    service: str
    version: str
    protocol: int
    pid: int


class StatsOut(Schema):
    sessions: int
    prompts: int
    observations: int
    summaries: int
    deliverables: int
    pending: int


class ErrorOut(Schema):
    error: str


@router.get("/health", response=HealthOut)
def health(request: HttpRequest) -> dict[str, Any]:
    return {"status": "ok", "service": "cmem", "version": config.VERSION, "protocol": config.PROTOCOL_VERSION, "pid": os.getpid()}


@router.get("/stats", response=StatsOut)
def stats(request: HttpRequest, project: str | None = None) -> dict[str, Any]:
    return dict(stats_compute(project=project))


@router.post("/hooks/{platform}/{event}", response={200: dict[str, Any], 400: ErrorOut})
def hook(request: HttpRequest, platform: str, event: str) -> Status[dict[str, Any]]:
    """Run one hook event; the response body is exactly what `cmem hook` prints."""
    try:
        return Status(200, hook_handle(platform=platform, event=event, body=request.body))
    except HookInputError as exc:
        return Status(400, {"error": str(exc)})
