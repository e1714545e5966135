"""Which model writes the observations: the provider choice, in one documented order.

`CLAUDE_MEM_PROVIDER` (claude-mem's key and values) names it: `claude` (the user's Claude
Code login, through the installed `claude` CLI), `openrouter`, `gemini`, `anthropic` (an API
key), `openai-compatible` (any Chat Completions endpoint), `offline`, or `auto` (default).
`CLAUDE_MEM_COMPRESSOR` is the older alias: `offline`, `api` (= anthropic), or a provider name;
it applies when CLAUDE_MEM_PROVIDER is left at `auto`.

`auto` takes the first configured of AUTO_ORDER:
1. anthropic: an Anthropic API key in cmem's places (CLAUDE_MEM_ANTHROPIC_API_KEY,
   ANTHROPIC_API_KEY, ~/.anthropic/api_key, <data dir>/.env): today's behaviour is kept;
2. claude: the `claude` CLI found (CLAUDE_CODE_PATH or PATH) and logged in (its credentials
   file, else `claude auth status`);
3. openrouter: CLAUDE_MEM_OPENROUTER_API_KEY (or OPENROUTER_API_KEY in the data dir's .env);
4. gemini: CLAUDE_MEM_GEMINI_API_KEY (or GEMINI_API_KEY in the data dir's .env);
5. openai-compatible: CLAUDE_MEM_OPENAI_BASE_URL set;
6. offline.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType

from memory import config

OFFLINE = "offline"
AUTO = "auto"
AUTO_ORDER = ("anthropic", "claude", "openrouter", "gemini", "openai-compatible")
NAMES = (*AUTO_ORDER, OFFLINE, AUTO)
NOTHING_CONFIGURED = (
    "no API key: no Anthropic key, no logged-in `claude` CLI, no OpenRouter, Gemini or "
    "OpenAI-compatible endpoint configured"
)


@dataclass(frozen=True)
class Choice:
    name: str  # a provider of AUTO_ORDER, or "offline"
    why: str  # one line for `cmem doctor` and the dashboard
    requested: str  # what the settings asked for (auto, a provider name)


def module(name: str) -> ModuleType:
    """The module that talks to provider `name` (imported on first use: the SDKs are slow)."""
    if name == "anthropic":
        # only the configured provider's module loads (each ~10 ms, its SDK on first call)
        from memory.compression.providers import anthropic_api

        return anthropic_api
    if name == "claude":
        # only the configured provider's module loads
        from memory.compression.providers import claude_cli

        return claude_cli
    if name in {"openrouter", "gemini", "openai-compatible"}:
        # only the configured provider's module loads
        from memory.compression.providers import openai_compat

        return openai_compat
    raise KeyError(name)


def requested(settings: dict[str, str] | None = None) -> tuple[str, str]:
    """(the provider asked for, the setting that asked)."""
    values = settings if settings is not None else config.load()
    provider = config.get("CLAUDE_MEM_PROVIDER", values).strip().lower() or AUTO
    if provider != AUTO:
        return provider, f"CLAUDE_MEM_PROVIDER={provider}"
    alias = config.get("CLAUDE_MEM_COMPRESSOR", values).strip().lower() or AUTO
    if alias == "api":
        return "anthropic", "CLAUDE_MEM_COMPRESSOR=api"
    if alias != AUTO:
        return alias, f"CLAUDE_MEM_COMPRESSOR={alias}"
    return AUTO, ""


def provider_choice() -> Choice:
    """The provider the next batch goes to, and why (never raises)."""
    settings = config.load()
    asked, source = requested(settings)
    if asked == OFFLINE:
        return Choice(OFFLINE, source, asked)
    if asked != AUTO:
        if asked not in AUTO_ORDER:
            return Choice(OFFLINE, f"{source} is not a known provider ({', '.join(NAMES)})", asked)
        ready, why = module(asked).configured(asked)
        if ready:
            return Choice(asked, f"{source}: {why}", asked)
        return Choice(OFFLINE, f"{source} but {why}", asked)
    for name in AUTO_ORDER:
        ready, why = module(name).configured(name)
        if ready:
            return Choice(name, f"auto: {why}", AUTO)
    return Choice(OFFLINE, NOTHING_CONFIGURED, AUTO)


def observer_sources() -> dict[str, str]:
    """The observer's provider and where its key and base URL come from, as settings.json and
    this process's environment give them (secrets are never printed, only their source)."""
    choice = provider_choice()
    sources = (
        {"key": "none", "base_url": "none"}
        if choice.name == OFFLINE
        else module(choice.name).sources(choice.name)
    )
    return {"provider": choice.name, "why": choice.why, **sources}
