"""The settings page's words: a human label per key and the sections, named by what they
affect. The raw key stays on the page (small, under the label) because it is what the
environment and settings.json use. Keys without a label here get one from their name."""

from __future__ import annotations

LABELS: dict[str, str] = {
    "CLAUDE_MEM_DATA_DIR": "Data folder",
    "CLAUDE_MEM_WORKER_HOST": "Worker address",
    "CLAUDE_MEM_WORKER_PORT": "Worker port",
    "CLAUDE_MEM_WORKER_URL": "Shared worker URL",
    "CLAUDE_MEM_API_TOKEN": "Your team token",
    "CLAUDE_MEM_CA_FILE": "Certificate authority file",
    "CLAUDE_MEM_LOG_LEVEL": "Log detail",
    "CLAUDE_MEM_MODEL": "Observer model",
    "CLAUDE_MEM_PROVIDER": "Observer provider",
    "CLAUDE_MEM_COMPRESSOR": "Compressor",
    "CLAUDE_MEM_LANGUAGE": "Language of observations",
    "CLAUDE_MEM_MODE": "Mode (claude-mem compatible)",
    "CLAUDE_MEM_ANTHROPIC_API_KEY": "Anthropic API key",
    "CLAUDE_MEM_ANTHROPIC_BASE_URL": "Anthropic API URL",
    "CLAUDE_MEM_INHERIT_ANTHROPIC_ENV": "Use the shell's Anthropic settings",
    "CLAUDE_MEM_CLAUDE_PATH": "Claude CLI path",
    "CLAUDE_MEM_CLAUDE_BASE_URL": "Claude CLI API URL",
    "CLAUDE_MEM_CLAUDE_API_KEY": "Claude CLI API key",
    "CLAUDE_MEM_CLAUDE_TIMEOUT_MS": "Claude CLI timeout (ms)",
    "CLAUDE_MEM_OPENROUTER_BASE_URL": "OpenRouter URL",
    "CLAUDE_MEM_OPENROUTER_API_KEY": "OpenRouter API key",
    "CLAUDE_MEM_OPENROUTER_MODEL": "OpenRouter model",
    "CLAUDE_MEM_OPENROUTER_SITE_URL": "OpenRouter site URL",
    "CLAUDE_MEM_OPENROUTER_APP_NAME": "OpenRouter app name",
    "CLAUDE_MEM_GEMINI_BASE_URL": "Gemini URL",
    "CLAUDE_MEM_GEMINI_API_KEY": "Gemini API key",
    "CLAUDE_MEM_GEMINI_MODEL": "Gemini model",
    "CLAUDE_MEM_OPENAI_BASE_URL": "OpenAI-compatible URL",
    "CLAUDE_MEM_OPENAI_API_KEY": "OpenAI-compatible API key",
    "CLAUDE_MEM_OPENAI_MODEL": "OpenAI-compatible model",
    "CLAUDE_MEM_OPENAI_STREAM": "Stream OpenAI-compatible replies",
    "CLAUDE_MEM_DAILY_TOKEN_BUDGET": "Daily observer token budget",
    "CLAUDE_MEM_API_TIMEOUT_MS": "Model API timeout (ms)",
    "CLAUDE_MEM_BATCH_SIZE": "Tool uses per request",
    "CLAUDE_MEM_FIELD_CAP": "Longest field kept (characters)",
    "CLAUDE_MEM_EXCERPT_CAP": "Longest excerpt sent (characters)",
    "CLAUDE_MEM_API_RETRIES": "Retries after an API error",
    "CLAUDE_MEM_API_BACKOFF_MS": "Wait before a retry (ms)",
    "CLAUDE_MEM_CLAIM_TIMEOUT_SECONDS": "Reclaim stuck work after (s)",
    "CLAUDE_MEM_SKIP_TOOLS": "Tools never recorded",
    "CLAUDE_MEM_EXCLUDED_PROJECTS": "Projects never recorded",
    "CLAUDE_MEM_REDACT_SECRETS": "Redact secrets",
    "CLAUDE_MEM_CONTEXT_OBSERVATIONS": "Observations in the index",
    "CLAUDE_MEM_CONTEXT_SESSION_COUNT": "Sessions in the index",
    "CLAUDE_MEM_CONTEXT_TOKENS": "Index size (tokens)",
    "CLAUDE_MEM_READ_GATE": "Read gate",
    "CLAUDE_MEM_READ_GATE_WINDOW": "Refusals the adaptive gate weighs",
    "CLAUDE_MEM_READ_GATE_TURN_TOKENS": "Cost of an extra turn (tokens)",
    "CLAUDE_MEM_INSTALL_ROUTE": "Install route",
    "CLAUDE_MEM_CODEX_SHELL_READ_GATE": "Gate Codex shell reads",
    "CLAUDE_MEM_READ_GATE_MIN_BYTES": "Smallest file gated (bytes)",
    "CLAUDE_MEM_READ_GATE_LIMIT": "Rows in the gate's timeline",
    "CLAUDE_MEM_TIME_ZONE": "Time zone",
    "CLAUDE_MEM_DELIVERABLES_ENABLED": "Keep deliverables",
    "CLAUDE_MEM_DELIVERABLES_MAX_BYTES": "Largest deliverable kept (bytes)",
    "CLAUDE_MEM_RETENTION_DAYS": "Keep history for (days)",
    "CLAUDE_MEM_DATABASE_URL": "Database",
    "CLAUDE_MEM_QUEUE_URL": "Task queue",
    "CLAUDE_MEM_REQUIRE_TOKEN": "Require a token",
    "CLAUDE_MEM_PROJECT_IDENTITY": "How projects are named",
    "CLAUDE_MEM_EMBEDDINGS_MODEL": "Embeddings model",
    "CLAUDE_MEM_SEMANTIC_INJECT": "Add related memory to prompts",
    "CLAUDE_MEM_SEMANTIC_INJECT_LIMIT": "Related observations per prompt",
    "CLAUDE_MEM_VECTOR_INDEX": "Vector index (SQLite)",
    "CLAUDE_MEM_HOOK_TIMEOUT_MS": "Hook timeout (ms)",
    "CLAUDE_MEM_SESSION_MODEL": "Main model when a transcript names none",
    "CLAUDE_MEM_BILLING": "How money is labelled",
}

# (section, what it affects in one line, key fragments matched in order); the first match
# wins, the rest land in "Other".
SECTIONS: list[tuple[str, str, tuple[str, ...]]] = [
    (
        "Team mode",
        "Sharing one memory server with teammates.",
        (
            "WORKER_URL",
            "API_TOKEN",
            "CA_FILE",
            "DATABASE_URL",
            "QUEUE_URL",
            "REQUIRE_TOKEN",
            "PROJECT_IDENTITY",
        ),
    ),
    (
        "What the agent sees at session start",
        "The index injected when a session starts, and related memory added to prompts.",
        ("CONTEXT_", "TIME_ZONE", "SEMANTIC_INJECT"),
    ),
    (
        "Reading files",
        "Whether a Read of a file memory already knows is refused, advised or let through.",
        ("READ_GATE", "INSTALL_ROUTE"),
    ),
    (
        "Money in Stats",
        "Which prices the savings are shown at, and whether they are API-equivalent.",
        ("SESSION_MODEL", "BILLING"),
    ),
    (
        "How observations are written",
        "Which model compresses tool uses into observations, and what it may spend.",
        (
            "MODEL",
            "COMPRESSOR",
            "PROVIDER",
            "LANGUAGE",
            "CLAUDE_MEM_MODE",
            "CLAUDE_MEM_CLAUDE_",
            "OPENROUTER",
            "GEMINI",
            "OPENAI",
            "ANTHROPIC",
            "TOKEN_BUDGET",
            "API_",
            "BATCH",
            "CAP",
            "CLAIM",
        ),
    ),
    (
        "Files it makes for you",
        "Deliverables: files written outside the project, kept for My Work.",
        ("DELIVERABLES_",),
    ),
    (
        "Privacy and what is kept",
        "What is never recorded, what is redacted, and how long history stays.",
        ("REDACT", "EXCLUDED", "RETENTION", "PRIVATE", "SKIP_TOOLS"),
    ),
    (
        "The worker and hooks",
        "The local server, its logs, and how long a hook may wait for it.",
        ("DATA_DIR", "WORKER_", "LOG_LEVEL", "HOOK_"),
    ),
]
SECTION_ORDER = (
    "What the agent sees at session start",
    "Reading files",
    "How observations are written",
    "Money in Stats",
    "Files it makes for you",
    "Privacy and what is kept",
    "The worker and hooks",
    "Team mode",
    "Other",
)
SECTION_HELP = {title: help_line for title, help_line, _ in SECTIONS} | {
    "Other": "Everything else."
}
_WORDS = {"ms": "(ms)", "url": "URL", "api": "API", "mcp": "MCP"}


def setting_label(key: str) -> str:
    if key in LABELS:
        return LABELS[key]
    words = key.removeprefix("CLAUDE_MEM_").lower().split("_")
    text = " ".join(_WORDS.get(w, w) for w in words)
    return text[:1].upper() + text[1:]


def section_for(key: str) -> str:
    for title, _, fragments in SECTIONS:
        if any(fragment in key for fragment in fragments):
            return title
    return "Other"
