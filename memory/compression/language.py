"""The user's language for what the observer writes: CLAUDE_MEM_LANGUAGE, or claude-mem's
CLAUDE_MEM_MODE=code--<lang>. English by default.

Only observations and summaries change language; code identifiers, paths, commands and the
type/concept ids stay verbatim, and what cmem shows the agent itself (the SessionStart
header, the gate's menu) stays English.
"""

from __future__ import annotations

from memory import config

NAMES = {
    "en": "English",
    "zh": "Simplified Chinese (简体中文)",
    "zh-tw": "Traditional Chinese (繁體中文)",
    "ja": "Japanese (日本語)",
    "ko": "Korean (한국어)",
    "de": "German (Deutsch)",
    "es": "Spanish (Español)",
    "fr": "French (Français)",
    "pt": "Portuguese (Português)",
    "it": "Italian (Italiano)",
    "ru": "Russian (Русский)",
}


def language(settings: dict[str, str] | None = None) -> str:
    """A lower-case language code; 'en' unless set."""
    values = settings if settings is not None else config.load()
    raw = config.get("CLAUDE_MEM_LANGUAGE", values).strip().lower().replace("_", "-")
    mode = config.get("CLAUDE_MEM_MODE", values).strip().lower()
    if (not raw or raw == "en") and mode.startswith("code--"):
        raw = mode.removeprefix("code--")
    if raw in {"", "english"}:
        return "en"
    if raw in {"zh-cn", "zh-hans", "chinese"}:
        return "zh"
    return raw


def language_name(code: str) -> str:
    return NAMES.get(code, code)
