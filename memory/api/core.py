"""Core API: health, stats and the hook endpoint (thin handlers; logic in services)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import OperationalError
from django.http import HttpRequest, HttpResponse
from ninja import Router, Schema, Status

from memory import config
from memory.agents.base import HookInputError
from memory.api import JSON_CONTENT_TYPE
from memory.compression.providers import observer_sources
from memory.hooks.dispatch import hook_handle
from memory.hooks.tasks import spool_kick
from memory.importers.json_io import memory_export
from memory.retrieval.embeddings import store as embeddings_store
from memory.runtime.foreground import foreground
from memory.services import stats_compute

log = logging.getLogger(__name__)
router = Router(tags=["memory"])


class HealthOut(Schema):
    status: str
    service: str
    version: str
    protocol: int
    # Only the owner learns the server's pid (`cmem status`, tests); others learn it is up.
    pid: int | None = None


class StatsOut(Schema):
    sessions: int
    prompts: int
    observations: int
    summaries: int
    deliverables: int
    pending: int
    # Only with ?status=1 (what `cmem status` asks the running worker): rows with no vector
    # yet, and the observer as the worker's own settings and environment choose it.
    waiting_for_vector: int | None = None
    observer: dict[str, str] | None = None


class ErrorOut(Schema):
    error: str


# The two answers /api/health gives, rendered once per process (the pid is in one of them):
# it is the HTTP floor, and ninja's validation of its schema was a third of it.
_health_bodies: dict[tuple[int, bool], bytes] = {}


def health_body(*, owner: bool) -> bytes:
    """The /api/health answer; the owner also learns the server's pid."""
    key = (os.getpid(), owner)
    body = _health_bodies.get(key)
    if body is None:
        answer: dict[str, Any] = {
            "status": "ok",
            "service": "cmem",
            "version": config.VERSION,
            "protocol": config.PROTOCOL_VERSION,
        }
        if owner:
            answer["pid"] = key[0]
        body = _health_bodies[key] = json.dumps(
            HealthOut(**answer).dict(exclude_none=True)
        ).encode()
    return body


@router.get("/health", response=HealthOut, exclude_none=True)
def health(request: HttpRequest) -> HttpResponse:
    # foreground(): a caller waits on these reads, so background work (the consumer, outline
    # parsing) waits for them, as it does for a hook.
    with foreground():
        body = health_body(owner=bool(getattr(request, "cmem_owner", False)))
    return HttpResponse(body, content_type=JSON_CONTENT_TYPE)


@router.get("/stats", response=StatsOut, exclude_none=True)
def stats(request: HttpRequest, project: str | None = None, status: bool = False) -> dict[str, Any]:
    """Counts of what memory holds; `status=1` adds what `cmem status` prints beside them (the
    rows still waiting for a vector, the observer), so the CLI needs no database of its own."""
    out = dict(stats_compute(project=project))
    if status:
        out["waiting_for_vector"] = embeddings_store.waiting()
        out["observer"] = observer_sources()
    return out


@router.get("/export", response=dict[str, Any])
def export(request: HttpRequest, project: str = "") -> dict[str, Any]:
    """Sessions with their prompts, observations, summaries and deliverable metadata, as
    `cmem export` writes them (`cmem import json` reads it back); a token gets its own."""
    return dict(memory_export(project=project))


def hook_answer(
    *, platform: str, event: str, size: int, read_body: Callable[[], bytes]
) -> tuple[int, dict[str, Any]]:
    """(status, JSON body) of one hook request of `size` bytes, read by `read_body`: the
    ninja handler answers through this."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if limit is not None and size > limit:
        return 413, {
            "error": f"hook payload is {size:,} bytes; the limit is {limit:,} (CMEM_MAX_REQUEST_BYTES)"
        }
    try:
        answer = hook_handle(platform=platform, event=event, body=read_body())
    except RequestDataTooBig:
        return 413, {
            "error": f"hook payload exceeds the limit of {limit:,} bytes (CMEM_MAX_REQUEST_BYTES)"
        }
    except HookInputError as exc:
        return 400, {"error": str(exc)}
    except OperationalError as exc:
        # SQLite busy past busy_timeout, or the disk full: nothing was stored (the transaction
        # rolled back); 503 makes the hook client spool the event for a later ingest.
        log.warning("hook %s/%s not stored: %s", platform, event, exc)
        return 503, {
            "error": f"database unavailable ({exc}); the hook client spools capture events"
        }
    spool_kick()  # a worker that answers is a worker that can drain what was spooled
    return 200, answer


@router.post(
    "/hooks/{platform}/{event}",
    response={200: dict[str, Any], 400: ErrorOut, 413: ErrorOut, 503: ErrorOut},
)
def hook(request: HttpRequest, platform: str, event: str) -> Status[dict[str, Any]]:
    """Run one hook event; the response body is exactly what `cmem hook` prints."""
    status, body = hook_answer(
        platform=platform,
        event=event,
        size=int(request.META.get("CONTENT_LENGTH") or 0),
        read_body=lambda: request.body,
    )
    return Status(status, body)
