"""What the model has seen of each file, per session (seed 001). Placeholder until issue 5."""

from __future__ import annotations

from memory.models import Session
from memory.platforms.base import HookEvent


def file_view_record_from_tool(*, session: Session, event: HookEvent) -> None:
    """Record the view a Read gave the model, or the new content an Edit/Write left."""


def file_views_reset(*, session: Session) -> None:
    """clear/compact: the model no longer holds any view."""
