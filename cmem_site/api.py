"""The one NinjaAPI: every app mounts its router here."""

from __future__ import annotations

from ninja import NinjaAPI

from deliverables.api import router as deliverables_router
from memory import config
from memory.api.core import router as memory_router
from memory.api.insights import router as insights_router
from memory.api.retrieval import router as retrieval_router

api = NinjaAPI(
    title="cmem", version=config.VERSION, description="Persistent memory for coding agents."
)
api.add_router("/", memory_router)
# Each capability mounts its own router below (one line each).
api.add_router("/", retrieval_router)
api.add_router("/", insights_router)
api.add_router("/", deliverables_router)
