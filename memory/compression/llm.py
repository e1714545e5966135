"""The one seam to the Anthropic API: the only module that imports `anthropic`.

`complete()` sends one request (fixed, cached system prompt + this batch only) and returns
a small `LLMReply`; every failure surfaces as `LLMError(retryable=…)`. The SDK's own
retries are off (`max_retries=0`) so that the backoff here is the only one, with delays a
test can shrink. The API key is read at call time and never logged, stored or shown.

`anthropic` is imported on first use: it takes over a second to import, and this module is
loaded by every process that imports the tasks (the web server too).
"""

from __future__ import annotations

import logging
import os
import random
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory import config

if TYPE_CHECKING:
    import anthropic

log = logging.getLogger(__name__)

_RETRYABLE_STATUSES = {408, 409, 429, 500, 502, 503, 504, 529}


@dataclass(frozen=True)
class Usage:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def total(self) -> int:
        return self.input + self.output + self.cache_read + self.cache_write


@dataclass(frozen=True)
class LLMReply:
    text: str
    usage: Usage
    model: str
    stop_reason: str = ""  # "max_tokens" when the answer was cut off


class LLMError(Exception):
    """A request that did not produce an answer. `retryable` is False for 4xx like a bad key."""

    def __init__(self, message: str, *, retryable: bool, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status


def api_key() -> str:
    """ANTHROPIC_API_KEY, else ~/.anthropic/api_key, else `<data dir>/.env`; '' when none."""
    key = os.environ.get("ANTHROPIC_API_KEY", "").strip()
    if key:
        return key
    try:
        key = (Path.home() / ".anthropic" / "api_key").read_text().strip()
    except OSError:
        key = ""
    if key:
        return key
    try:
        lines = (config.data_dir() / ".env").read_text().splitlines()
    except OSError:
        return ""
    for line in lines:
        name, _, value = line.strip().removeprefix("export ").partition("=")
        if name.strip() == "ANTHROPIC_API_KEY":
            return value.strip().strip("'\"")
    return ""


def model_name() -> str:
    return config.get("CLAUDE_MEM_MODEL") or config.SETTINGS["CLAUDE_MEM_MODEL"][0]


_SECRET_PATTERNS = [
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(?i)(x-api-key|authorization|api[_-]?key|bearer)([\"'\s:=]+)[A-Za-z0-9_\-\.]{8,}"),
]


def scrub(text: str) -> str:
    """An error message safe to log and show: the key and anything key-shaped removed."""
    key = api_key()
    if key and len(key) >= 6:
        text = text.replace(key, "[key]")
    text = _SECRET_PATTERNS[0].sub("[key]", text)
    text = _SECRET_PATTERNS[1].sub(lambda m: f"{m.group(1)}{m.group(2)}[redacted]", text)
    return text[:300]


_clients: dict[tuple[str, str, float], anthropic.Anthropic] = {}
_clients_lock = threading.Lock()


def _client(key: str, timeout: float) -> anthropic.Anthropic:
    import anthropic

    # One client (and its connection pool) per key/base URL/timeout, shared by worker threads.
    base_url = os.environ.get("ANTHROPIC_BASE_URL", "")
    cache_key = (key, base_url, timeout)
    with _clients_lock:
        client = _clients.get(cache_key)
        if client is None:
            client = anthropic.Anthropic(
                api_key=key,
                base_url=base_url or None,
                max_retries=0,
                timeout=anthropic.Timeout(timeout, connect=min(timeout, 5.0)),
            )
            _clients[cache_key] = client
        return client


def _classify(exc: Exception) -> LLMError:
    import anthropic

    if isinstance(exc, anthropic.APITimeoutError):
        return LLMError("the API did not answer in time (timeout)", retryable=True)
    if isinstance(exc, anthropic.APIConnectionError):
        return LLMError(f"cannot reach the API: {scrub(str(exc))}", retryable=True)
    if isinstance(exc, anthropic.APIStatusError):
        status = exc.status_code
        message = ""
        body = exc.body
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            message = str(body["error"].get("message", ""))
        return LLMError(
            f"API answered {status}: {scrub(message or exc.message)}",
            retryable=status in _RETRYABLE_STATUSES or status >= 500,
            status=status,
        )
    return LLMError(f"API request failed: {scrub(str(exc))}", retryable=False)


def _retry_after(exc: Exception) -> float:
    response = getattr(exc, "response", None)
    if response is None:
        return 0.0
    try:
        return float(response.headers.get("retry-after", "0") or 0)
    except ValueError:
        return 0.0


def complete(*, system: str, messages: list[dict[str, Any]], max_tokens: int) -> LLMReply:
    """Send one Messages request, retrying 429/5xx/timeouts with exponential backoff.

    1. The system prompt goes first with `cache_control`, so every batch after the first
       reads it from the prompt cache (when it reaches the model's minimum cacheable size).
    2. Retries: CLAUDE_MEM_API_RETRIES more attempts, sleeping CLAUDE_MEM_API_BACKOFF_MS × 2^n
       (with jitter, at least the server's retry-after, at most 30 s).
    """
    key = api_key()
    if not key:
        raise LLMError(
            "no Anthropic API key (ANTHROPIC_API_KEY, ~/.anthropic/api_key or <data dir>/.env)",
            retryable=False,
        )
    settings = config.load()
    timeout = max(0.1, config.get_int("CLAUDE_MEM_API_TIMEOUT_MS", settings) / 1000)
    retries = max(0, config.get_int("CLAUDE_MEM_API_RETRIES", settings))
    backoff = max(0, config.get_int("CLAUDE_MEM_API_BACKOFF_MS", settings)) / 1000
    model = config.get("CLAUDE_MEM_MODEL", settings) or config.SETTINGS["CLAUDE_MEM_MODEL"][0]
    client = _client(key, timeout)
    system_blocks = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
    attempt = 0
    while True:
        try:
            message = client.messages.create(
                model=model,
                max_tokens=max_tokens,
                system=system_blocks,  # type: ignore[arg-type]
                messages=messages,  # type: ignore[arg-type]
            )
            break
        except Exception as exc:  # noqa: BLE001 - every SDK failure becomes one LLMError
            error = _classify(exc)
            if not error.retryable or attempt >= retries:
                log.warning(
                    "compression request failed after %d attempt(s): %s", attempt + 1, error
                )
                raise error from None
            delay = min(
                30.0, max(backoff * 2**attempt * random.uniform(0.8, 1.2), _retry_after(exc))
            )
            log.info(
                "compression request failed (%s); retry %d in %.2fs", error, attempt + 1, delay
            )
            time.sleep(delay)
            attempt += 1
    text = "".join(
        str(getattr(block, "text", "")) for block in message.content if block.type == "text"
    )
    usage = message.usage
    return LLMReply(
        text=text,
        usage=Usage(
            input=usage.input_tokens or 0,
            output=usage.output_tokens or 0,
            cache_read=getattr(usage, "cache_read_input_tokens", 0) or 0,
            cache_write=getattr(usage, "cache_creation_input_tokens", 0) or 0,
        ),
        model=message.model or model,
        stop_reason=str(message.stop_reason or ""),
    )
