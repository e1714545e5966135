"""Observer health: one line for the SessionStart header when compression is degraded.
Placeholder until issue 4."""

from __future__ import annotations


def observer_health_line(*, project: str | None = None) -> str:
    """'' when healthy; else one line saying memory is degraded and why (no secrets)."""
    return ""
