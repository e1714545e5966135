"""Deliverable capture at Stop. Placeholder until issue 7."""

from __future__ import annotations

from memory.models import Session
from memory.platforms.base import HookEvent


def deliverables_capture(*, session: Session, event: HookEvent) -> list[object]:
    """Copy files the agent wrote outside the project in this turn; called while Stop is handled."""
    return []
