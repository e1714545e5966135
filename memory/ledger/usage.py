"""What one model call used, in tokens and money: what the ledger records and prices."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Usage:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    cost_usd: float = 0.0
    provider: str = ""  # who served it (the ledger's provider column)
    model: str = ""

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write
