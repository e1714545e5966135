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
import time
from dataclasses import replace
from typing import Any

from memory import config
from memory.compression.providers import OFFLINE, module, provider_choice
from memory.compression.replies import (  # noqa: F401 - the seam's public names
    LLMError,
    LLMReply,
    Usage,
    retryable_status,
    sum_usage,
)
from memory.compression.replies import scrub as _scrub
from memory.ledger import prices

log = logging.getLogger(__name__)


def api_key() -> str:
    """The Anthropic API key from cmem's places ('' when none); see providers.anthropic_api."""
    # the provider modules load on first use (providers.module())
    from memory.compression.providers import anthropic_api

    return anthropic_api.api_key()


def model_name() -> str:
    choice = provider_choice()
    if choice.name == "offline":
        return "offline"
    return str(module(choice.name).model(choice.name))


def scrub(text: str) -> str:
    """An error message safe to log and show (also the keys found only in files)."""
    # the provider modules load on first use (providers.module())
    from memory.compression.providers import anthropic_api, openai_compat

    return _scrub(text, (*anthropic_api.secrets(), *openai_compat.secrets()))


def complete(*, system: str, messages: list[dict[str, Any]], max_tokens: int) -> LLMReply:
    """Send one request to the chosen provider, retrying retryable failures.

    Retries: CLAUDE_MEM_API_RETRIES more attempts, sleeping CLAUDE_MEM_API_BACKOFF_MS × 2^n
    (with jitter, at least the server's retry-after, at most 30 s)."""
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
