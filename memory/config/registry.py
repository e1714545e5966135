"""Every setting cmem reads, one record each. A record is the one place a setting's key,
default, kind, bounds, label, section and help are written.

From these records come memory.config's defaults and bounds, the settings page (memory/forms.py),
`cmem settings_table`, and docs/reference/settings.md (`make reference`). Keys that
claude-mem defines keep its names and defaults. The internal switches (environment
variables the code reads that are not user settings) are listed in memory/config/switches.py
and joined here, so they are documented, never loaded as settings.

Stdlib only, like the rest of memory.config: Django's settings module imports it.
"""

from __future__ import annotations

import os

from memory.config.setting import Setting

# Re-exported: the registry is where every setting and switch is looked up.
from memory.config.switches import INTERNAL as INTERNAL
from memory.config.switches import INTERNAL_SWITCHES as INTERNAL_SWITCHES


def _default_port() -> str:
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return str(37700 + uid % 100)


# Sections of the settings page and the reference, named by what they affect, in page order.
SESSION_START = "What the agent sees at session start"
READING = "Reading files"
OBSERVER = "How observations are written"
MONEY = "Money in Stats"
DELIVERABLES = "Files it makes for you"
PRIVACY = "Privacy and what is kept"
WORKER = "The worker and hooks"
TEAM = "Team mode"
SYNC = "Sync between machines"
OTHER = "Other"
SECTIONS: tuple[tuple[str, str], ...] = (
    (
        SESSION_START,
        "The index injected when a session starts, and related memory added to prompts.",
    ),
    (
        READING,
        "Whether a Read of a file memory already knows is refused, advised or let through.",
    ),
    (OBSERVER, "Which model compresses tool uses into observations, and what it may spend."),
    (MONEY, "Which prices the savings are shown at, and whether they are API-equivalent."),
    (DELIVERABLES, "Deliverables: files written outside the project, kept for My Work."),
    (PRIVACY, "What is never recorded, what is redacted, and how long history stays."),
    (WORKER, "The local server, its logs, and how long a hook may wait for it."),
    (TEAM, "Sharing one memory server with teammates."),
    (SYNC, "`cmem sync`: the same memory on several machines through a git remote you control."),
    (OTHER, "Everything else."),
)
REGISTRY: tuple[Setting, ...] = (
    Setting(
        "CLAUDE_MEM_DATA_DIR",
        "~/.claude-mem",
        kind="str",
        label="Data folder",
        section=WORKER,
        help="Where everything lives (env only in practice).",
        basic=True,
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_WORKER_HOST",
        "127.0.0.1",
        kind="str",
        label="Worker address",
        section=WORKER,
        help="Address the worker binds.",
        locked=True,
        restart=True,
    ),
    Setting(
        "CLAUDE_MEM_WORKER_PORT",
        _default_port(),
        kind="int",
        shown_default="37700 + uid % 100",
        bounds=(1, 65_535),
        label="Worker port",
        section=WORKER,
        help="Port the worker binds (37700 + uid % 100).",
        basic=True,
        locked=True,
        restart=True,
    ),
    Setting(
        "CLAUDE_MEM_WORKER_URL",
        "",
        kind="str",
        label="Shared worker URL",
        section=TEAM,
        help="Team mode: the shared worker's base URL the hook client talks to.",
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_API_TOKEN",
        "",
        kind="str",
        label="Your team token",
        section=TEAM,
        help="Team mode: the per-user token the hook client sends.",
        secret=True,
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_CA_FILE",
        "",
        kind="str",
        label="Certificate authority file",
        section=TEAM,
        help=(
            "Team mode: CA bundle that verifies the shared worker's https certificate (empty = "
            "system CAs)."
        ),
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_LOG_LEVEL",
        "INFO",
        kind="choice",
        choices=("DEBUG", "INFO", "WARN", "ERROR", "SILENT"),
        label="Log detail",
        section=WORKER,
        help="DEBUG, INFO, WARN, ERROR or SILENT.",
        restart=True,
    ),
    Setting(
        "CLAUDE_MEM_MODEL",
        "claude-haiku-4-5-20251001",
        kind="str",
        label="Observer model",
        section=OBSERVER,
        help="Model that compresses tool uses (anthropic and claude providers).",
        basic=True,
    ),
    Setting(
        "CLAUDE_MEM_PROVIDER",
        "auto",
        kind="choice",
        choices=(
            "auto",
            "claude",
            "anthropic",
            "openrouter",
            "gemini",
            "openai-compatible",
            "offline",
        ),
        label="Observer provider",
        section=OBSERVER,
        help=(
            "Observer model provider: auto, claude, anthropic, openrouter, gemini, openai-"
            "compatible or offline."
        ),
        basic=True,
    ),
    Setting(
        "CLAUDE_MEM_COMPRESSOR",
        "auto",
        kind="choice",
        choices=("auto", "api", "offline"),
        label="Compressor",
        section=OBSERVER,
        help=(
            "Older alias of CLAUDE_MEM_PROVIDER: auto, api (= anthropic), offline or a provider "
            "name."
        ),
    ),
    Setting(
        "CLAUDE_MEM_LANGUAGE",
        "en",
        kind="str",
        label="Language of observations",
        section=OBSERVER,
        help="Language observations and summaries are written in (en, zh, ja, de, es, fr…).",
        basic=True,
    ),
    Setting(
        "CLAUDE_MEM_MODE",
        "code",
        kind="str",
        label="Mode (claude-mem compatible)",
        section=OBSERVER,
        help="claude-mem's mode; code--<lang> (e.g. code--zh) sets the language.",
    ),
    Setting(
        "CLAUDE_MEM_ANTHROPIC_API_KEY",
        "",
        kind="str",
        label="Anthropic API key",
        section=OBSERVER,
        help="anthropic provider: API key (else ANTHROPIC_API_KEY…).",
        secret=True,
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_ANTHROPIC_BASE_URL",
        "",
        kind="str",
        label="Anthropic API URL",
        section=OBSERVER,
        help="anthropic provider: base URL; empty = api.anthropic.com.",
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_INHERIT_ANTHROPIC_ENV",
        "false",
        kind="bool",
        label="Use the shell's Anthropic settings",
        section=OBSERVER,
        help=(
            "Let the observer use Claude Code's ANTHROPIC_BASE_URL / ANTHROPIC_AUTH_TOKEN from "
            "the environment."
        ),
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_CLAUDE_PATH",
        "",
        kind="str",
        label="Claude CLI path",
        section=OBSERVER,
        help=(
            "claude provider: the `claude` CLI (claude-mem's CLAUDE_CODE_PATH in settings.json "
            "too); empty = PATH; none = never."
        ),
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_CLAUDE_BASE_URL",
        "",
        kind="str",
        label="Claude CLI API URL",
        section=OBSERVER,
        help="claude provider: ANTHROPIC_BASE_URL given to the CLI.",
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_CLAUDE_API_KEY",
        "",
        kind="str",
        label="Claude CLI API key",
        section=OBSERVER,
        help="claude provider: ANTHROPIC_API_KEY given to the CLI.",
        secret=True,
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_CLAUDE_TIMEOUT_MS",
        "120000",
        kind="int",
        label="Claude CLI timeout (ms)",
        section=OBSERVER,
        help="claude provider: timeout of one `claude -p` run.",
    ),
    Setting(
        "CLAUDE_MEM_OPENROUTER_BASE_URL",
        "",
        kind="str",
        label="OpenRouter URL",
        section=OBSERVER,
        help="openrouter: base URL; empty = https://openrouter.ai/api/v1.",
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_OPENROUTER_API_KEY",
        "",
        kind="str",
        label="OpenRouter API key",
        section=OBSERVER,
        help="openrouter: API key.",
        secret=True,
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_OPENROUTER_MODEL",
        "xiaomi/mimo-v2-flash:free",
        kind="str",
        label="OpenRouter model",
        section=OBSERVER,
        help="openrouter: model.",
    ),
    Setting(
        "CLAUDE_MEM_OPENROUTER_SITE_URL",
        "",
        kind="str",
        label="OpenRouter site URL",
        section=OBSERVER,
        help="openrouter: HTTP-Referer sent.",
    ),
    Setting(
        "CLAUDE_MEM_OPENROUTER_APP_NAME",
        "claude-mem",
        kind="str",
        label="OpenRouter app name",
        section=OBSERVER,
        help="openrouter: X-Title sent.",
    ),
    Setting(
        "CLAUDE_MEM_GEMINI_BASE_URL",
        "",
        kind="str",
        label="Gemini URL",
        section=OBSERVER,
        help="gemini: base URL; empty = Google's OpenAI-compatible endpoint.",
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_GEMINI_API_KEY",
        "",
        kind="str",
        label="Gemini API key",
        section=OBSERVER,
        help="gemini: API key.",
        secret=True,
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_GEMINI_MODEL",
        "gemini-flash-latest",
        kind="str",
        label="Gemini model",
        section=OBSERVER,
        help="gemini: model.",
    ),
    Setting(
        "CLAUDE_MEM_OPENAI_BASE_URL",
        "",
        kind="str",
        label="OpenAI-compatible URL",
        section=OBSERVER,
        help="openai-compatible: base URL (Ollama, LM Studio, vLLM…).",
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_OPENAI_API_KEY",
        "",
        kind="str",
        label="OpenAI-compatible API key",
        section=OBSERVER,
        help="openai-compatible: API key (a local server needs none).",
        secret=True,
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_OPENAI_MODEL",
        "gpt-4o-mini",
        kind="str",
        label="OpenAI-compatible model",
        section=OBSERVER,
        help="openai-compatible: model.",
    ),
    Setting(
        "CLAUDE_MEM_OPENAI_STREAM",
        "false",
        kind="bool",
        label="Stream OpenAI-compatible replies",
        section=OBSERVER,
        help="openai-compatible: stream the answer.",
    ),
    Setting(
        "CLAUDE_MEM_DAILY_TOKEN_BUDGET",
        "2000000",
        kind="int",
        bounds=(0, 10**12),
        label="Daily observer token budget",
        section=OBSERVER,
        help="API tokens a day before falling back to offline; 0 = unlimited.",
        basic=True,
    ),
    Setting(
        "CLAUDE_MEM_API_TIMEOUT_MS",
        "30000",
        kind="int",
        bounds=(100, 600_000),
        label="Model API timeout (ms)",
        section=OBSERVER,
        help="Timeout of one compression request.",
    ),
    Setting(
        "CLAUDE_MEM_BATCH_SIZE",
        "20",
        kind="int",
        bounds=(1, 500),
        label="Tool uses per request",
        section=OBSERVER,
        help="Tool uses compressed in one request at most.",
    ),
    Setting(
        "CLAUDE_MEM_FIELD_CAP",
        "16000",
        kind="int",
        bounds=(100, 10_000_000),
        label="Longest field kept (characters)",
        section=OBSERVER,
        help="Characters kept of one tool input or output field.",
    ),
    Setting(
        "CLAUDE_MEM_EXCERPT_CAP",
        "2000",
        kind="int",
        bounds=(100, 100_000),
        label="Longest excerpt sent (characters)",
        section=OBSERVER,
        help="Characters sent of a file read, written, or a command's output (head + tail).",
    ),
    Setting(
        "CLAUDE_MEM_API_RETRIES",
        "3",
        kind="int",
        bounds=(0, 10),
        label="Retries after an API error",
        section=OBSERVER,
        help="Retries of a compression request on 429, 5xx or a timeout.",
    ),
    Setting(
        "CLAUDE_MEM_API_BACKOFF_MS",
        "1000",
        kind="int",
        bounds=(0, 60_000),
        label="Wait before a retry (ms)",
        section=OBSERVER,
        help="First retry delay; doubles on every retry.",
    ),
    Setting(
        "CLAUDE_MEM_CLAIM_TIMEOUT_SECONDS",
        "300",
        kind="int",
        bounds=(1, 86_400),
        label="Reclaim stuck work after (s)",
        section=OBSERVER,
        help="Claimed events older than this are handed to another consumer.",
        hidden=True,
    ),
    Setting(
        "CLAUDE_MEM_SKIP_TOOLS",
        "ListMcpResourcesTool,SlashCommand,Skill,TodoWrite,AskUserQuestion",
        kind="list",
        label="Tools never recorded",
        section=PRIVACY,
        help="Tools never observed.",
    ),
    Setting(
        "CLAUDE_MEM_EXCLUDED_PROJECTS",
        "",
        kind="list",
        label="Projects never recorded",
        section=PRIVACY,
        help="Comma-separated globs of project paths that store nothing.",
        basic=True,
    ),
    Setting(
        "CLAUDE_MEM_REDACT_SECRETS",
        "true",
        kind="bool",
        label="Redact secrets",
        section=PRIVACY,
        help="Redact API keys, tokens and passwords before storing.",
    ),
    Setting(
        "CLAUDE_MEM_CONTEXT_OBSERVATIONS",
        "50",
        kind="int",
        bounds=(0, 500),
        label="Observations in the index",
        section=SESSION_START,
        help="Observations in the SessionStart index.",
        basic=True,
    ),
    Setting(
        "CLAUDE_MEM_CONTEXT_SESSION_COUNT",
        "10",
        kind="int",
        bounds=(0, 100),
        label="Sessions in the index",
        section=SESSION_START,
        help="Sessions (summaries) the SessionStart index covers.",
    ),
    Setting(
        "CLAUDE_MEM_CONTEXT_TOKENS",
        "2500",
        kind="int",
        bounds=(0, 200_000),
        label="Index size (tokens)",
        section=SESSION_START,
        help="Token budget of the SessionStart index.",
    ),
    Setting(
        "CLAUDE_MEM_CONTEXT_PINNED_TOKENS",
        "300",
        kind="int",
        bounds=(0, 5_000),
        label="Pinned memories (tokens)",
        section=SESSION_START,
        help="Pinned memories lead the index, within this many tokens (0: pins are not shown first).",
    ),
    Setting(
        "CLAUDE_MEM_CONSOLIDATE",
        "auto",
        kind="choice",
        choices=("auto", "rules", "model", "off"),
        label="Consolidation",
        section=OBSERVER,
        help=(
            "The background pass that folds duplicates, marks reversed decisions superseded and"
            " refuted hypotheses abandoned, and demotes memories never recalled. auto: the"
            " observer's model when it has one, else offline rules."
        ),
    ),
    Setting(
        "CLAUDE_MEM_CONSOLIDATE_EVERY_HOURS",
        "24",
        kind="int",
        bounds=(1, 24 * 30),
        label="Consolidate every (hours)",
        section=OBSERVER,
        help="How often the consolidation pass runs in the background.",
    ),
    Setting(
        "CLAUDE_MEM_CONSOLIDATE_MAX_TOKENS",
        "30000",
        kind="int",
        bounds=(0, 2_000_000),
        label="Consolidation budget (tokens a pass)",
        section=OBSERVER,
        help="Model tokens one consolidation pass may spend; past it, the rest waits for the next pass.",
    ),
    Setting(
        "CLAUDE_MEM_DEMOTE_AFTER_WEEKS",
        "8",
        kind="int",
        bounds=(0, 520),
        label="Demote unrecalled memories after (weeks)",
        section=OBSERVER,
        help="Memories never recalled for this long leave the index (not search). 0: never.",
    ),
    Setting(
        "CLAUDE_MEM_READ_GATE",
        "adaptive",
        kind="choice",
        choices=("adaptive", "deny", "context", "off"),
        label="Read gate",
        section=READING,
        help=(
            "File-read gate: adaptive (deny while refusals pay off in the project), deny, context"
            " or off."
        ),
        basic=True,
    ),
    Setting(
        "CLAUDE_MEM_READ_GATE_WINDOW",
        "8",
        kind="int",
        label="Refusals the adaptive gate weighs",
        section=READING,
        help="Adaptive gate: how many of the project's latest refusals (last 14 days) are weighed.",
    ),
    Setting(
        "CLAUDE_MEM_READ_GATE_TURN_TOKENS",
        "6000",
        kind="int",
        label="Cost of an extra turn (tokens)",
        section=READING,
        help=(
            "Adaptive gate: what a refusal the model answers by reading again costs beyond its "
            "text (one more turn)."
        ),
    ),
    Setting(
        "CLAUDE_MEM_SESSION_MODEL",
        "claude-opus-5-5",
        kind="str",
        label="Main model when a transcript names none",
        section=MONEY,
        help=(
            "Main model assumed for money in Stats when a session's transcript names none (Claude"
            " Code 2.1.332's default)."
        ),
    ),
    Setting(
        "CLAUDE_MEM_BILLING",
        "auto",
        kind="choice",
        choices=("auto", "api", "subscription"),
        label="How money is labelled",
        section=MONEY,
        help=(
            "How Stats labels money: api, subscription (API-equivalent cost) or auto "
            "(subscription unless an API key is set)."
        ),
    ),
    Setting(
        "CLAUDE_MEM_INSTALL_ROUTE",
        "install",
        kind="str",
        label="Install route",
        section=READING,
        help=(
            "How the agent loaded cmem's MCP server (tool names in gate text): install or "
            "plugin:<name>."
        ),
        hidden=True,
    ),
    Setting(
        "CLAUDE_MEM_CODEX_SHELL_READ_GATE",
        "context",
        kind="choice",
        choices=("context", "deny", "off"),
        label="Gate Codex shell reads",
        section=READING,
        help="Codex read-only shell commands (cat, head, sed -n…): context, deny or off.",
    ),
    Setting(
        "CLAUDE_MEM_READ_GATE_MIN_BYTES",
        "1500",
        kind="int",
        bounds=(0, 1_000_000_000),
        label="Smallest file gated (bytes)",
        section=READING,
        help="Files smaller than this always pass the gate.",
    ),
    Setting(
        "CLAUDE_MEM_READ_GATE_LIMIT",
        "15",
        kind="int",
        bounds=(1, 500),
        label="Rows in the gate's timeline",
        section=READING,
        help="Rows in the gate's timeline.",
    ),
    Setting(
        "CLAUDE_MEM_TIME_ZONE",
        "",
        kind="str",
        label="Time zone",
        section=SESSION_START,
        help="IANA zone for the times shown to the agent; empty = the machine's local zone.",
    ),
    Setting(
        "CLAUDE_MEM_DELIVERABLES_ENABLED",
        "true",
        kind="bool",
        label="Keep deliverables",
        section=DELIVERABLES,
        help="Copy files written outside the project at Stop.",
    ),
    Setting(
        "CLAUDE_MEM_DELIVERABLES_MAX_BYTES",
        "20000000",
        kind="int",
        bounds=(0, 1_000_000_000),
        label="Largest deliverable kept (bytes)",
        section=DELIVERABLES,
        help="Largest deliverable copied.",
    ),
    Setting(
        "CLAUDE_MEM_RETENTION_DAYS",
        "30",
        kind="int",
        bounds=(0, 36_500),
        label="Keep history for (days)",
        section=PRIVACY,
        help="Days raw captured payloads are kept; 0 = forever.",
    ),
    Setting(
        "CLAUDE_MEM_DATABASE_URL",
        "",
        kind="str",
        label="Database",
        section=TEAM,
        help="Team mode: postgres://… instead of the embedded SQLite.",
        locked=True,
        restart=True,
    ),
    Setting(
        "CLAUDE_MEM_QUEUE_URL",
        "",
        kind="str",
        label="Task queue",
        section=TEAM,
        help="Team mode: redis://… instead of Huey's SQLite queue.",
        locked=True,
        restart=True,
    ),
    Setting(
        "CLAUDE_MEM_REQUIRE_TOKEN",
        "false",
        kind="bool",
        label="Require a token",
        section=TEAM,
        help=(
            "Team mode: /api/ calls need a token (always on when the worker binds a non-loopback "
            "host)."
        ),
    ),
    Setting(
        "CLAUDE_MEM_PROJECT_IDENTITY",
        "auto",
        kind="choice",
        choices=("auto", "local", "remote"),
        label="How projects are named",
        section=TEAM,
        help=(
            "Project names: local (repository folder), remote (normalised git remote URL) or auto"
            " (remote in team mode)."
        ),
    ),
    Setting(
        "CLAUDE_MEM_EMBEDDINGS_MODEL",
        "",
        kind="str",
        label="Embeddings model",
        section=OBSERVER,
        help=(
            "Empty: the bundled all-MiniLM-L6-v2 (int8, run by ONNX Runtime). Or a local folder "
            "holding another sentence encoder in the same layout (model.onnx taking input_ids "
            "and attention_mask, tokenizer.json of the WordPiece kind); nothing is downloaded."
        ),
    ),
    Setting(
        "CLAUDE_MEM_EMBEDDINGS_IDLE_SECONDS",
        "600",
        kind="int",
        bounds=(0, 86_400),
        label="Unload the embedding model after (s)",
        section=OBSERVER,
        help=(
            "Seconds without use after which the worker ends the embedding model's process "
            "(about 95 MB) until the next search or embedding needs it; 0 keeps it running."
        ),
    ),
    Setting(
        "CLAUDE_MEM_SEMANTIC_INJECT",
        "false",
        kind="bool",
        label="Add related memory to prompts",
        section=SESSION_START,
        help="On each prompt, add the few most related observations of earlier sessions.",
        basic=True,
    ),
    Setting(
        "CLAUDE_MEM_FAILURE_RECALL",
        "adaptive",
        kind="choice",
        choices=("adaptive", "on", "off"),
        label="Recall past fixes when a tool fails",
        section=SESSION_START,
        help=(
            "When a tool fails, add the recorded fixes of the same error (once per error and "
            "session): adaptive (stops in a project where the same error keeps coming back "
            "after a recall), on or off."
        ),
    ),
    Setting(
        "CLAUDE_MEM_SEMANTIC_INJECT_LIMIT",
        "3",
        kind="int",
        label="Related observations per prompt",
        section=SESSION_START,
        help="Observations added per prompt at most.",
    ),
    Setting(
        "CLAUDE_MEM_VECTOR_INDEX",
        "auto",
        kind="choice",
        choices=("auto", "disk", "scan", "sqlite-vec"),
        label="Vector index (SQLite)",
        section=OTHER,
        help=(
            "SQLite vector search: auto, disk (an int8 copy read in chunks: memory flat in the "
            "rows), scan (every vector in memory) or sqlite-vec."
        ),
        hidden=True,
    ),
    Setting(
        "CLAUDE_MEM_SYNC_REMOTE",
        "",
        kind="str",
        label="Sync remote",
        section=SYNC,
        help=(
            "The git remote `cmem sync` pushes to and pulls from (any URL git accepts); set by "
            "the first `cmem sync --remote URL`. Empty = sync is not set up."
        ),
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_SYNC_AUTO",
        "off",
        kind="choice",
        choices=("off", "session-end", "schedule"),
        label="Sync automatically",
        section=SYNC,
        help=(
            "off (only `cmem sync`), session-end (a background sync when a session ends) or "
            "schedule (every CLAUDE_MEM_SYNC_INTERVAL_MINUTES)."
        ),
    ),
    Setting(
        "CLAUDE_MEM_SYNC_INTERVAL_MINUTES",
        "60",
        kind="int",
        bounds=(5, 10_080),
        label="Sync every (minutes)",
        section=SYNC,
        help="Minutes between scheduled syncs (CLAUDE_MEM_SYNC_AUTO=schedule).",
    ),
    Setting(
        "CLAUDE_MEM_SYNC_ENCRYPT",
        "false",
        kind="bool",
        label="Encrypt what is synced",
        section=SYNC,
        help=(
            "Seal every file pushed with the key in <data dir>/sync/key (set by `cmem sync "
            "--remote URL --encrypt`); the remote then holds opaque names only."
        ),
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_SYNC_KEY",
        "",
        kind="str",
        label="Sync key",
        section=SYNC,
        help=(
            "The encryption key, for a machine that cannot keep the key file (a container's "
            "environment); empty = <data dir>/sync/key."
        ),
        secret=True,
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_SYNC_DELIVERABLES",
        "false",
        kind="bool",
        label="Sync deliverables' files",
        section=SYNC,
        help=(
            "Also push the bytes of deliverables (their metadata always travels), up to "
            "CLAUDE_MEM_SYNC_DELIVERABLES_MAX_BYTES each."
        ),
    ),
    Setting(
        "CLAUDE_MEM_SYNC_DELIVERABLES_MAX_BYTES",
        "5000000",
        kind="int",
        bounds=(0, 1_000_000_000),
        label="Largest deliverable synced (bytes)",
        section=SYNC,
        help="Deliverables larger than this travel as metadata only.",
    ),
    Setting(
        "CLAUDE_MEM_SYNC_FROM_REMOTE",
        "",
        kind="str",
        label="Pull memory at setup from",
        section=SYNC,
        help=(
            "`cmem setup` imports the memory synced to this remote before the first session (an"
            " ephemeral machine or container sets it in its environment)."
        ),
        locked=True,
    ),
    Setting(
        "CLAUDE_MEM_HOOK_TIMEOUT_MS",
        "2000",
        kind="int",
        bounds=(50, 120_000),
        label="Hook timeout (ms)",
        section=WORKER,
        help="How long a hook waits for the worker.",
    ),
    Setting(
        "CLAUDE_MEM_WATCH",
        "",
        kind="list",
        label="Agents followed through their session files",
        section=WORKER,
        help=(
            "Agents without hooks whose session files the worker follows (`cmem watch`):"
            " `continue` (Continue CLI, ~/.continue/sessions). Set by `cmem install --continue`."
        ),
        restart=True,
    ),
)


# --- views of the records (what memory.config and the settings page read) ------------------

BY_KEY: dict[str, Setting] = {record.key: record for record in (*REGISTRY, *INTERNAL_SWITCHES)}
# Every key cmem reads, with its default and help, in registry order (settings.json's order).
SETTINGS: dict[str, tuple[str, str]] = {
    record.key: (record.default, record.help) for record in REGISTRY
}
# Bounds of every numeric setting (inclusive). A value outside is clamped, with a problem
# recorded and a log line: `CLAUDE_MEM_FIELD_CAP=-5` must not switch the cap off (a cap <= 0
# means "no cap" inside the sanitizer), nor a batch size of 0 stall compression.
INT_BOUNDS: dict[str, tuple[int, int]] = {
    record.key: record.bounds for record in REGISTRY if record.bounds is not None
}
SECTION_ORDER: tuple[str, ...] = tuple(title for title, _ in SECTIONS)
SECTION_HELP: dict[str, str] = dict(SECTIONS)


def setting(key: str) -> Setting:
    """The record of `key`; KeyError names a key the registry does not know."""
    return BY_KEY[key]


def setting_label(key: str) -> str:
    return BY_KEY[key].label


def section_for(key: str) -> str:
    return BY_KEY[key].section
