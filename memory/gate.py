"""The file-read gate. Allows everything until issue 5 fills it in."""

from __future__ import annotations

from memory.platforms.base import GateDecision, HookEvent, HookResult


def gate_decide(*, event: HookEvent) -> HookResult:
    return HookResult(gate=GateDecision(decision="allow"))
