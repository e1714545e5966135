"""USD per million tokens: the observer's models (when a provider reports no cost) and the
agents' main models (what the ledger's tokens are worth in money).

(input, cache read, 5-minute cache write, output). Anthropic list prices as published on
platform.claude.com (checked 2026-12-01; Haiku 5.5 at its prompt-up-to-100k band, Sonnet 5.5
after its 2026-10-07 cache-read cut). The longest matching prefix wins, so `claude-opus-5-5`
is not priced as `claude-opus-5`; a model not listed costs 0 here and its usage is still
recorded in tokens. OpenRouter and the `claude` CLI report their own cost, which wins.
"""

from __future__ import annotations

from memory.ledger.usage import Usage

PER_MILLION: dict[str, tuple[float, float, float, float]] = {
    # Main models of the agents (Claude Code 2.1.332 names its default `claude-opus-5-5`).
    "claude-fable-5-1": (10.0, 0.25, 12.5, 50.0),
    "claude-fable-5": (10.0, 1.0, 12.5, 50.0),
    "claude-opus-5-5": (4.0, 0.20, 5.0, 20.0),
    "claude-opus-5": (5.0, 0.50, 6.25, 25.0),
    "claude-sonnet-5-5": (2.0, 0.10, 2.50, 10.0),
    "claude-sonnet-5": (2.0, 0.20, 2.50, 10.0),
    "claude-haiku-5-5": (0.10, 0.01, 0.125, 0.50),
    "claude-haiku-4-5": (1.0, 0.10, 1.25, 5.0),
    "claude-sonnet-4-5": (3.0, 0.30, 3.75, 15.0),
    "claude-opus-4-5": (5.0, 0.50, 6.25, 25.0),
    "claude-3-5-haiku": (0.80, 0.08, 1.0, 4.0),
    "gemini-flash-latest": (0.30, 0.03, 0.0, 2.50),
    "gemini-2.5-flash": (0.30, 0.03, 0.0, 2.50),
    "gpt-4o-mini": (0.15, 0.075, 0.0, 0.60),
}


# Longest prefix first: `claude-opus-5-5` before `claude-opus-5`.
_PREFIXES = sorted(PER_MILLION, key=len, reverse=True)


def price_row(model: str) -> tuple[float, float, float, float] | None:
    """The model's (input, cache read, cache write, output) USD per million, or None."""
    name = model.lower().split("/")[-1].split("[")[0]  # `claude-opus-5-5[1m]` is priced alike
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return PER_MILLION[prefix]
    return None


def input_usd(model: str, tokens: int) -> float:
    """What `tokens` input tokens cost `model` at its uncached input price (0 if unpriced)."""
    row = price_row(model)
    return round(tokens * row[0] / 1_000_000, 8) if row else 0.0


def cost_usd(model: str, usage: Usage) -> float:
    row = price_row(model)
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
