"""Asking the observer model: which mode, one request with one repair, health bookkeeping.

Every provider (memory.compression.providers) sits behind `llm.complete`; this module is
the same for all of them: the prompts, the parser, the repair request, the health record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from memory.compression import health, llm, prompts
from memory.compression.parse import ParseError
from memory.compression.providers import OFFLINE, provider_choice

# What one observer answer parses into: observations, or a session summary.
_Parsed = TypeVar("_Parsed")

# A batch claimed this many times was never finished (its consumer died each time, maybe
# because of the batch itself): compress it offline rather than call the API again.
MAX_API_ATTEMPTS = 3


class MalformedReply(Exception):
    def __init__(self, reason: str, usage: llm.Usage) -> None:
        super().__init__(reason)
        self.usage = usage


def compressor_mode() -> tuple[str, str]:
    """('api' | 'offline', why). Offline when asked, with no provider configured, with the
    budget spent, or for a minute after the provider failed repeatedly."""
    choice = provider_choice()
    if choice.name == OFFLINE:
        return OFFLINE, choice.why
    if health.budget_spent():
        return OFFLINE, "daily token budget spent"
    if health.api_paused():
        return OFFLINE, "the API keeps failing; pausing before the next try"
    return "api", ""


def complete_with_repair(
    message: str,
    *,
    max_tokens: int,
    summary: bool,
    parse: Callable[[llm.LLMReply], _Parsed],
) -> tuple[_Parsed, llm.Usage, str]:
    """Ask the observer; an unparseable answer gets one repair request quoting the error.

    Returns (parsed, usage of both requests, model). Raises llm.LLMError when the first
    request fails, MalformedReply (carrying the usage spent) when the repair fails too."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": message}]
    reply = llm.complete(system=prompts.system_prompt(), messages=messages, max_tokens=max_tokens)
    try:
        return parse(reply), reply.usage, reply.model
    except ParseError as exc:
        reason = str(exc)
    messages += [
        {"role": "assistant", "content": reply.text.strip() or "(empty)"},
        {"role": "user", "content": prompts.repair_message(reason=reason, summary=summary)},
    ]
    try:
        second = llm.complete(
            system=prompts.system_prompt(), messages=messages, max_tokens=max_tokens
        )
    except llm.LLMError as exc:
        raise MalformedReply(f"{reason}; the repair request failed: {exc}", reply.usage) from None
    usage = llm.sum_usage(reply.usage, second.usage)
    try:
        return parse(second), usage, second.model
    except ParseError as exc:
        raise MalformedReply(str(exc), usage) from None


def observer_attempt(
    call: Callable[[], tuple[_Parsed, llm.Usage, str]],
) -> tuple[tuple[_Parsed, llm.Usage, str] | None, llm.Usage, str]:
    """Run one observer API call and record its outcome for the health check.

    Returns (the call's result or None on failure, the usage to bill, the error or "")."""
    try:
        result = call()
    except llm.LLMError as exc:
        health.observer_record_failure(error=str(exc), rate_limited=exc.status == 429)
        return None, llm.Usage(), str(exc)
    except MalformedReply as exc:
        error = f"unusable model reply after one repair: {exc}"
        health.observer_record_failure(error=error, tokens=exc.usage.total)
        return None, exc.usage, error
    health.observer_record_success(tokens=result[1].total)
    return result, result[1], ""


def complete_blocks(reply: llm.LLMReply) -> str:
    """An answer cut off at max_tokens keeps its finished observations; the torn one goes."""
    if reply.stop_reason != "max_tokens":
        return reply.text
    end = reply.text.rfind("</observation>")
    return reply.text[: end + len("</observation>")] if end >= 0 else reply.text
