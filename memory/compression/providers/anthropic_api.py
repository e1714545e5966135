"""The `anthropic` provider: the Messages API with an API key (the only module importing
`anthropic`, on first use: it takes over a second to import).

Where the key and base URL come from, in this order (`sources()` reports which won):
- key: CLAUDE_MEM_ANTHROPIC_API_KEY (env or settings.json), ANTHROPIC_API_KEY, then
  ~/.anthropic/api_key, then `<data dir>/.env`;
- base URL: CLAUDE_MEM_ANTHROPIC_BASE_URL; Claude Code's own ANTHROPIC_BASE_URL and
  ANTHROPIC_AUTH_TOKEN (a hook-spawned worker inherits them: they point Claude Code at its
  gateway, not necessarily the observer) are used only with CLAUDE_MEM_INHERIT_ANTHROPIC_ENV=true.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory import config
from memory.compression.replies import LLMError, LLMReply, Usage, retryable_status, scrub

if TYPE_CHECKING:
    import anthropic

NAME = "anthropic"
# Passed explicitly: given None, the SDK would read ANTHROPIC_BASE_URL from the environment.
DEFAULT_BASE_URL = "https://api.anthropic.com"


def _dotenv(name: str) -> str:
    try:
        lines = (config.data_dir() / ".env").read_text().splitlines()
    except OSError:
        return ""
    for line in lines:
        key, _, value = line.strip().removeprefix("export ").partition("=")
        if key.strip() == name:
            return value.strip().strip("'\"")
    return ""


def _inherit() -> bool:
    return config.get_bool("CLAUDE_MEM_INHERIT_ANTHROPIC_ENV")


def key_and_source() -> tuple[str, str]:
    key = config.get("CLAUDE_MEM_ANTHROPIC_API_KEY").strip()
    if key:
        return key, "CLAUDE_MEM_ANTHROPIC_API_KEY"
    key = os.environ.get("ANTHROPIC_API_KEY", "").strip()
    if key:
        return key, "ANTHROPIC_API_KEY (environment)"
    if _inherit():
        key = os.environ.get("ANTHROPIC_AUTH_TOKEN", "").strip()
        if key:
            return key, "ANTHROPIC_AUTH_TOKEN (inherited: CLAUDE_MEM_INHERIT_ANTHROPIC_ENV)"
    try:
        key = (Path.home() / ".anthropic" / "api_key").read_text().strip()
    except OSError:
        key = ""
    if key:
        return key, "~/.anthropic/api_key"
    key = _dotenv("ANTHROPIC_API_KEY")
    return (key, "<data dir>/.env") if key else ("", "")


def api_key() -> str:
    return key_and_source()[0]


def base_url_and_source() -> tuple[str, str]:
    url = config.get("CLAUDE_MEM_ANTHROPIC_BASE_URL").strip()
    if url:
        return url, "CLAUDE_MEM_ANTHROPIC_BASE_URL"
    if _inherit() and os.environ.get("ANTHROPIC_BASE_URL"):
        return (
            os.environ["ANTHROPIC_BASE_URL"],
            "ANTHROPIC_BASE_URL (inherited: CLAUDE_MEM_INHERIT_ANTHROPIC_ENV)",
        )
    return DEFAULT_BASE_URL, "default (api.anthropic.com)"


def configured(name: str = NAME) -> tuple[bool, str]:
    key, source = key_and_source()
    if key:
        return True, f"Anthropic API key from {source}"
    return (
        False,
        "no Anthropic API key (ANTHROPIC_API_KEY, ~/.anthropic/api_key or <data dir>/.env)",
    )


def model(name: str = NAME) -> str:
    return config.get("CLAUDE_MEM_MODEL") or config.SETTINGS["CLAUDE_MEM_MODEL"][0]


def secrets() -> list[str]:
    return [api_key()]


def sources(name: str = NAME) -> dict[str, str]:
    return {"key": key_and_source()[1] or "none", "base_url": base_url_and_source()[1]}


_clients: dict[tuple[str, str, float], anthropic.Anthropic] = {}
_clients_lock = threading.Lock()


def _client(key: str, base_url: str, timeout: float) -> anthropic.Anthropic:
    # heavy SDK (~hundreds of ms): first model call only
    import anthropic

    # One client (and its connection pool) per key/base URL/timeout, shared by worker threads.
    cache_key = (key, base_url, timeout)
    with _clients_lock:
        client = _clients.get(cache_key)
        if client is None:
            client = anthropic.Anthropic(
                api_key=key,
                base_url=base_url or DEFAULT_BASE_URL,
                max_retries=0,
                timeout=anthropic.Timeout(timeout, connect=min(timeout, 5.0)),
            )
            _clients[cache_key] = client
        return client


def _classify(exc: Exception) -> LLMError:
    # heavy SDK: loaded by _client() before any error can come from it
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
            retryable=retryable_status(status),
            status=status,
            retry_after=_retry_after(exc),
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


def send(
    *, name: str, system: str, messages: list[dict[str, Any]], max_tokens: int, timeout: float
) -> LLMReply:
    """One Messages request. The system prompt goes with `cache_control`, so every batch
    after the first reads it from the prompt cache (past the model's minimum cacheable size)."""
    key = api_key()
    if not key:
        raise LLMError(configured()[1], retryable=False)
    chosen = model()
    client = _client(key, base_url_and_source()[0], timeout)
    system_blocks = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
    try:
        message = client.messages.create(
            model=chosen,
            max_tokens=max_tokens,
            system=system_blocks,  # type: ignore[arg-type]
            messages=messages,  # type: ignore[arg-type]
        )
    except Exception as exc:  # noqa: BLE001 - every SDK failure becomes one LLMError
        raise _classify(exc) from None
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
        model=message.model or chosen,
        stop_reason=str(message.stop_reason or ""),
        provider=NAME,
    )
