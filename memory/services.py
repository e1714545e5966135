"""Workflows that span models and are not big enough for a module of their own."""

from __future__ import annotations

from typing import TypedDict

from deliverables.models import Deliverable
from memory.capture.spool import spool_backlog
from memory.models import Event, Observation, Prompt, Session, Summary


class Stats(TypedDict):
    sessions: int
    prompts: int
    observations: int
    summaries: int
    deliverables: int
    pending: int


def stats_compute(*, project: str | None = None) -> Stats:
    """Counts for /api/stats; `pending` counts uncompressed events plus the spool backlog."""
    sessions = Session.objects.all()
    prompts = Prompt.objects.all()
    observations = Observation.objects.all()
    summaries = Summary.objects.all()
    deliverables = Deliverable.objects.all()
    events = Event.objects.pending()
    if project:
        sessions = sessions.filter(project=project)
        prompts = prompts.filter(session__project=project)
        observations = observations.filter(project=project)
        summaries = summaries.filter(project=project)
        deliverables = deliverables.filter(project=project)
        events = events.filter(session__project=project)
    return {
        "sessions": sessions.count(),
        "prompts": prompts.count(),
        "observations": observations.count(),
        "summaries": summaries.count(),
        "deliverables": deliverables.count(),
        # The spool holds no project until ingested, so it counts toward every view.
        "pending": events.count() + spool_backlog(),
    }
