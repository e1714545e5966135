"""Capture services: session init, tool-use recording, summary requests, session end.

Placeholder bodies until issue 3 lands; the hook dispatch already calls these."""

from __future__ import annotations

from memory.platforms.base import HookEvent, HookResult


def session_init(*, event: HookEvent) -> HookResult:
    return HookResult()


def observation_record(*, event: HookEvent) -> HookResult:
    return HookResult()


def summary_request(*, event: HookEvent) -> HookResult:
    return HookResult()


def session_end(*, event: HookEvent) -> HookResult:
    return HookResult()
