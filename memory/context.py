"""The SessionStart index. Empty until issue 5 fills it in."""

from __future__ import annotations

from memory.platforms.base import HookEvent, HookResult


def context_for_hook(*, event: HookEvent) -> HookResult:
    return HookResult()


def context_cache_invalidate(*, project: str) -> None:
    """Drop the cached index of a project (new observations, settings change)."""
