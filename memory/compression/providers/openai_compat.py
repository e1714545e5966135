"""Chat Completions providers through the official `openai` SDK: `openrouter`, `gemini`
(Google's OpenAI-compatible endpoint) and `openai-compatible` (Ollama, LM Studio, vLLM, any
`/v1/chat/completions`).

Settings per provider (claude-mem's names for the first two; the key may also sit in
`<data dir>/.env` as OPENROUTER_API_KEY / GEMINI_API_KEY, as claude-mem keeps it):
- openrouter: CLAUDE_MEM_OPENROUTER_BASE_URL, _API_KEY, _MODEL, _SITE_URL, _APP_NAME;
- gemini: CLAUDE_MEM_GEMINI_BASE_URL, _API_KEY, _MODEL;
- openai-compatible: CLAUDE_MEM_OPENAI_BASE_URL (required), _API_KEY (optional for a local
  server), _MODEL, CLAUDE_MEM_OPENAI_STREAM (stream the answer).
Nothing is read from OPENAI_* variables of the environment: those belong to the user's
other tools.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memory import config
from memory.compression.providers.anthropic_api import _dotenv
from memory.compression.replies import LLMError, LLMReply, Usage, retryable_status, scrub

if TYPE_CHECKING:
    import openai


@dataclass(frozen=True)
class Endpoint:
    prefix: str  # settings prefix, e.g. CLAUDE_MEM_OPENROUTER
    dotenv_key: str
    default_url: str
    default_model: str
    label: str


ENDPOINTS = {
    "openrouter": Endpoint(
        "CLAUDE_MEM_OPENROUTER",
        "OPENROUTER_API_KEY",
        "https://openrouter.ai/api/v1",
        "xiaomi/mimo-v2-flash:free",
        "OpenRouter",
    ),
    "gemini": Endpoint(
        "CLAUDE_MEM_GEMINI",
        "GEMINI_API_KEY",
        "https://generativelanguage.googleapis.com/v1beta/openai/",
        "gemini-flash-latest",
        "Gemini",
    ),
    "openai-compatible": Endpoint(
        "CLAUDE_MEM_OPENAI", "", "", "gpt-4o-mini", "OpenAI-compatible endpoint"
    ),
}


def _key(name: str) -> tuple[str, str]:
    ep = ENDPOINTS[name]
    key = config.get(f"{ep.prefix}_API_KEY").strip()
    if key:
        return key, f"{ep.prefix}_API_KEY"
    if ep.dotenv_key:
        key = _dotenv(ep.dotenv_key)
        if key:
            return key, f"{ep.dotenv_key} in <data dir>/.env"
    return "", ""


def _base_url(name: str) -> tuple[str, str]:
    ep = ENDPOINTS[name]
    url = config.get(f"{ep.prefix}_BASE_URL").strip()
    if url:
        return url, f"{ep.prefix}_BASE_URL"
    return ep.default_url, "default" if ep.default_url else ""


def configured(name: str) -> tuple[bool, str]:
    ep = ENDPOINTS[name]
    if name == "openai-compatible":
        url, source = _base_url(name)
        if url:
            return True, f"{ep.label} {url} from {source}"
        return False, "no CLAUDE_MEM_OPENAI_BASE_URL"
    key, source = _key(name)
    if key:
        return True, f"{ep.label} key from {source}"
    return False, f"no {ep.prefix}_API_KEY"


def model(name: str) -> str:
    ep = ENDPOINTS[name]
    return config.get(f"{ep.prefix}_MODEL").strip() or ep.default_model


def secrets() -> list[str]:
    return [_key(name)[0] for name in ENDPOINTS]


def sources(name: str) -> dict[str, str]:
    return {"key": _key(name)[1] or "none", "base_url": _base_url(name)[1] or "none"}


_clients: dict[tuple[str, str, float, tuple[tuple[str, str], ...]], openai.OpenAI] = {}
_clients_lock = threading.Lock()


def _client(name: str, timeout: float) -> openai.OpenAI:
    # heavy SDK (~hundreds of ms): first model call only
    import openai

    key = _key(name)[0] or "not-needed"  # a local server takes any key; the SDK wants one
    url = _base_url(name)[0]
    headers: dict[str, str] = {}
    if name == "openrouter":
        headers["X-Title"] = config.get("CLAUDE_MEM_OPENROUTER_APP_NAME").strip() or "cmem"
        site = config.get("CLAUDE_MEM_OPENROUTER_SITE_URL").strip()
        if site:
            headers["HTTP-Referer"] = site
    cache_key = (key, url, timeout, tuple(sorted(headers.items())))
    with _clients_lock:
        client = _clients.get(cache_key)
        if client is None:
            client = openai.OpenAI(
                api_key=key,
                base_url=url,
                max_retries=0,
                timeout=openai.Timeout(timeout, connect=min(timeout, 5.0)),
                default_headers=headers or None,
            )
            _clients[cache_key] = client
        return client


def _retry_after(exc: Exception) -> float:
    response = getattr(exc, "response", None)
    try:
        return float(response.headers.get("retry-after", "0") or 0) if response is not None else 0
    except ValueError:
        return 0.0


def _classify(exc: Exception, label: str) -> LLMError:
    # heavy SDK: loaded by _client() before any error can come from it
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return LLMError(f"{label} did not answer in time (timeout)", retryable=True)
    if isinstance(exc, openai.APIConnectionError):
        return LLMError(f"cannot reach {label}: {scrub(str(exc))}", retryable=True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        message = ""
        body = exc.body
        if isinstance(body, dict):
            inner = body.get("error", body)
            if isinstance(inner, dict):
                message = str(inner.get("message", ""))
        return LLMError(
            f"{label} answered {status}: {scrub(message or exc.message)}",
            retryable=retryable_status(status),
            status=status,
            retry_after=_retry_after(exc),
        )
    # A body that is not the JSON it should be (a proxy's error page, a torn stream): retry
    # a bounded number of times, then the batch goes offline.
    return LLMError(f"{label} sent an unusable answer: {scrub(str(exc))}", retryable=True)


def _usage(raw: Any) -> Usage:
    if raw is None:
        return Usage()
    prompt = int(getattr(raw, "prompt_tokens", 0) or 0)
    details = getattr(raw, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    extra = getattr(raw, "model_extra", None) or {}
    cost = extra.get("cost") if isinstance(extra, dict) else None  # OpenRouter reports it
    return Usage(
        input=max(0, prompt - cached),
        output=int(getattr(raw, "completion_tokens", 0) or 0),
        cache_read=cached,
        cost_usd=float(cost) if isinstance(cost, int | float) else 0.0,
    )


def _flatten(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        out.append({"role": str(message["role"]), "content": str(content or "")})
    return out


def send(
    *, name: str, system: str, messages: list[dict[str, Any]], max_tokens: int, timeout: float
) -> LLMReply:
    ep = ENDPOINTS[name]
    chosen = model(name)
    client = _client(name, timeout)
    body: dict[str, Any] = {
        "model": chosen,
        "max_tokens": max_tokens,
        "messages": [{"role": "system", "content": system}, *_flatten(messages)],
    }
    if name == "openrouter":
        body["extra_body"] = {"usage": {"include": True}}
    stream = name == "openai-compatible" and config.get_bool("CLAUDE_MEM_OPENAI_STREAM")
    try:
        if stream:
            return _streamed(client, body, chosen, name)
        completion = client.chat.completions.create(**body)
        choice = completion.choices[0]
        text = choice.message.content or ""
        stop = "max_tokens" if choice.finish_reason == "length" else str(choice.finish_reason)
        return LLMReply(
            text=text,
            usage=_usage(completion.usage),
            model=completion.model or chosen,
            stop_reason=stop,
            provider=name,
        )
    except LLMError:
        raise
    except Exception as exc:  # noqa: BLE001 - every SDK failure becomes one LLMError
        raise _classify(exc, ep.label) from None


def _streamed(client: openai.OpenAI, body: dict[str, Any], chosen: str, name: str) -> LLMReply:
    parts: list[str] = []
    usage = Usage()
    finish = ""
    served = chosen
    for chunk in client.chat.completions.create(
        **body, stream=True, stream_options={"include_usage": True}
    ):
        served = chunk.model or served
        if chunk.usage is not None:
            usage = _usage(chunk.usage)
        for choice in chunk.choices:
            if choice.delta and choice.delta.content:
                parts.append(choice.delta.content)
            if choice.finish_reason:
                finish = str(choice.finish_reason)
    return LLMReply(
        text="".join(parts),
        usage=usage,
        model=served,
        stop_reason="max_tokens" if finish == "length" else finish,
        provider=name,
    )
