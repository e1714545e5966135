"""The one seam to the observer model, whichever provider serves it.

`complete()` sends one request (fixed system prompt + this batch only) to the provider
`providers.provider_choice()` names and returns a small `LLMReply`; every failure surfaces
as `LLMError(retryable=…)`. Each provider module only translates one request; what is the
same for all lives here: the retry loop (429/5xx/timeouts, exponential backoff with jitter,
at least the server's retry-after, delays a test can shrink), the usage record and its cost
(the provider's own figure, else `prices.cost_usd`), and scrubbing keys out of errors.
SDK-level retries are off everywhere so that this backoff is the only one. Keys are read at
call time and never logged, stored or shown.
"""

from __future__ import annotations

import logging
import random
import re
import time
from dataclasses import dataclass, replace
from typing import Any

from memory import config

log = logging.getLogger(__name__)

_RETRYABLE_STATUSES = {408, 409, 429, 500, 502, 503, 504, 529}


def retryable_status(status: int) -> bool:
    return status in _RETRYABLE_STATUSES or status >= 500


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


def sum_usage(a: Usage, b: Usage) -> Usage:
    return Usage(
        a.input + b.input,
        a.output + b.output,
        a.cache_read + b.cache_read,
        a.cache_write + b.cache_write,
        round(a.cost_usd + b.cost_usd, 8),
        a.provider or b.provider,
        b.model or a.model,
    )


@dataclass(frozen=True)
class LLMReply:
    text: str
    usage: Usage
    model: str
    stop_reason: str = ""  # "max_tokens" when the answer was cut off
    provider: str = ""


class LLMError(Exception):
    """A request that did not produce an answer. `retryable` is False for 4xx like a bad key."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float = 0.0,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after


def api_key() -> str:
    """The Anthropic API key from cmem's places ('' when none); see providers.anthropic_api."""
    from memory.compression.providers import anthropic_api

    return anthropic_api.api_key()


def model_name() -> str:
    from memory.compression.providers import module, provider_choice

    choice = provider_choice()
    if choice.name == "offline":
        return "offline"
    return str(module(choice.name).model(choice.name))


_SECRET_PATTERNS = [
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"sk-or-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"AIza[A-Za-z0-9_\-]{20,}"),
    re.compile(r"(?i)(x-api-key|authorization|api[_-]?key|bearer)([\"'\s:=]+)[A-Za-z0-9_\-\.]{8,}"),
]


def _known_secrets() -> list[str]:
    from memory.compression.providers import anthropic_api, openai_compat

    return [s for s in (*anthropic_api.secrets(), *openai_compat.secrets()) if len(s) >= 6]


def scrub(text: str) -> str:
    """An error message safe to log and show: every key and anything key-shaped removed."""
    for key in _known_secrets():
        text = text.replace(key, "[key]")
    for pattern in _SECRET_PATTERNS[:3]:
        text = pattern.sub("[key]", text)
    text = _SECRET_PATTERNS[3].sub(lambda m: f"{m.group(1)}{m.group(2)}[redacted]", text)
    return text[:300]


def complete(*, system: str, messages: list[dict[str, Any]], max_tokens: int) -> LLMReply:
    """Send one request to the chosen provider, retrying retryable failures.

    Retries: CLAUDE_MEM_API_RETRIES more attempts, sleeping CLAUDE_MEM_API_BACKOFF_MS × 2^n
    (with jitter, at least the server's retry-after, at most 30 s)."""
    from memory.compression.providers import OFFLINE, module, prices, provider_choice

    choice = provider_choice()
    if choice.name == OFFLINE:
        raise LLMError(choice.why, retryable=False)
    provider = module(choice.name)
    settings = config.load()
    timeout = max(0.1, config.get_int("CLAUDE_MEM_API_TIMEOUT_MS", settings) / 1000)
    retries = max(0, config.get_int("CLAUDE_MEM_API_RETRIES", settings))
    backoff = max(0, config.get_int("CLAUDE_MEM_API_BACKOFF_MS", settings)) / 1000
    attempt = 0
    while True:
        try:
            reply: LLMReply = provider.send(
                name=choice.name,
                system=system,
                messages=messages,
                max_tokens=max_tokens,
                timeout=timeout,
            )
            break
        except LLMError as error:
            if not error.retryable or attempt >= retries:
                log.warning(
                    "compression request to %s failed after %d attempt(s): %s",
                    choice.name,
                    attempt + 1,
                    error,
                )
                raise
            delay = min(
                30.0, max(backoff * 2**attempt * random.uniform(0.8, 1.2), error.retry_after)
            )
            log.info(
                "compression request failed (%s); retry %d in %.2fs", error, attempt + 1, delay
            )
            time.sleep(delay)
            attempt += 1
    cost = reply.usage.cost_usd or prices.cost_usd(reply.model, reply.usage)
    return replace(
        reply, usage=replace(reply.usage, cost_usd=cost, provider=choice.name, model=reply.model)
    )
