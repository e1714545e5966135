"""USD per million tokens for the models cmem defaults to, when a provider reports no cost.

(input, cache read, cache write, output). List prices; a model not listed costs 0 here
and its usage is still recorded in tokens. OpenRouter and the `claude` CLI report their own
cost, which wins over this table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memory.compression.replies import Usage

PER_MILLION: dict[str, tuple[float, float, float, float]] = {
    "claude-haiku-4-5": (1.0, 0.10, 1.25, 5.0),
    "claude-sonnet-4-5": (3.0, 0.30, 3.75, 15.0),
    "claude-opus-4-5": (5.0, 0.50, 6.25, 25.0),
    "claude-3-5-haiku": (0.80, 0.08, 1.0, 4.0),
    "gemini-flash-latest": (0.30, 0.03, 0.0, 2.50),
    "gemini-2.5-flash": (0.30, 0.03, 0.0, 2.50),
    "gpt-4o-mini": (0.15, 0.075, 0.0, 0.60),
}


def _row(model: str) -> tuple[float, float, float, float] | None:
    name = model.lower().split("/")[-1]
    for prefix, row in PER_MILLION.items():
        if name.startswith(prefix):
            return row
    return None


def cost_usd(model: str, usage: Usage) -> float:
    row = _row(model)
    if row is None:
        return 0.0
    inp, cache_read, cache_write, out = row
    total = (
        usage.input * inp
        + usage.cache_read * cache_read
        + usage.cache_write * cache_write
        + usage.output * out
    )
    return round(total / 1_000_000, 8)
