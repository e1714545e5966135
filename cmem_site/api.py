"""The one NinjaAPI: every app mounts its router here."""

from __future__ import annotations

from django.db import DataError
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI

from deliverables.api import router as deliverables_router
from memory import config
from memory.api.consolidation import router as consolidation_router
from memory.api.core import router as memory_router
from memory.api.curation import router as curation_router
from memory.api.insights import router as insights_router
from memory.api.retrieval import router as retrieval_router
from memory.api.sharing import router as sharing_router
from memory.api.tool_uses import router as tool_uses_router

api = NinjaAPI(
    title="cmem", version=config.VERSION, description="Persistent memory for coding agents."
)
api.add_router("/", memory_router)
# Each capability mounts its own router below (one line each).
api.add_router("/", retrieval_router)
api.add_router("/", tool_uses_router)
api.add_router("/", insights_router)
api.add_router("/", curation_router)
api.add_router("/", deliverables_router)
api.add_router("/", consolidation_router)
api.add_router("/", sharing_router)


@api.exception_handler(DataError)
def value_unstorable(request: HttpRequest, exc: DataError) -> HttpResponse:
    """A value the database refuses (PostgreSQL takes no NUL in text: a query, a project
    name or a path with one) is the caller's mistake, not the server's: 400, saying which."""
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return api.create_response(
        request, {"error": f"a value in this request cannot be used: {reason}"}, status=400
    )
