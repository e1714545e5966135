"""The token ledger. Placeholder until issue 5."""

from __future__ import annotations

from memory.models import Session


def ledger_record_observer(*, session: Session | None, project: str, tokens: int) -> None:
    """Record the observer's API spend (input + output + cache tokens)."""
