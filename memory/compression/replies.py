"""What every observer provider hands back: usage, the reply, the one error type, and the
scrubbing of keys out of error text. Its own module so that the providers and the seam
(llm.py) both import it without importing each other."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from memory import config
from memory.ledger.usage import Usage

_RETRYABLE_STATUSES = {408, 409, 429, 500, 502, 503, 504, 529}


def retryable_status(status: int) -> bool:
    return status in _RETRYABLE_STATUSES or status >= 500


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


_SECRET_PATTERNS = [
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"sk-or-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"AIza[A-Za-z0-9_\-]{20,}"),
    re.compile(r"(?i)(x-api-key|authorization|api[_-]?key|bearer)([\"'\s:=]+)[A-Za-z0-9_\-\.]{8,}"),
]


def _known_secrets() -> list[str]:
    """Every key cmem may send: the *_API_KEY settings and the Anthropic variables."""
    values = config.load()
    found = [v for k, v in values.items() if k.endswith("_API_KEY")]
    found += [os.environ.get(k, "") for k in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")]
    return [s.strip() for s in found if len(s.strip()) >= 6]


def scrub(text: str, extra: tuple[str, ...] = ()) -> str:
    """An error message safe to log and show: every key and anything key-shaped removed."""
    for key in (*_known_secrets(), *(e for e in extra if len(e) >= 6)):
        text = text.replace(key, "[key]")
    for pattern in _SECRET_PATTERNS[:3]:
        text = pattern.sub("[key]", text)
    text = _SECRET_PATTERNS[3].sub(lambda m: f"{m.group(1)}{m.group(2)}[redacted]", text)
    return text[:300]
