"""cmem settings: data dir, `settings.json`, and env > file > default.

Stdlib only: Django's settings module imports it. The file itself is read by
memory.settings_file, the reader the hook client shares, so both take the same grammar. A
broken settings file never raises; it falls back to the defaults and records the problem in
`problems()` so `cmem doctor` and the dashboard can say which key is wrong.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

from memory import settings_file

log = logging.getLogger(__name__)

VERSION = "0.1.0"
PROTOCOL_VERSION = 1
# The zone the user started cmem in. Django overwrites TZ with settings.TIME_ZONE (UTC) when
# it loads, and children inherit that, so the first process records the original for all
# (memory.clock shows the agent local times in it).
os.environ.setdefault("CMEM_MACHINE_TZ", os.environ.get("TZ", ""))


def _default_port() -> str:
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return str(37700 + uid % 100)


# Every key cmem reads, with its default (strings, as the file stores them) and a line for
# the settings docs and page. Keys that claude-mem defines keep its names and defaults.
SETTINGS: dict[str, tuple[str, str]] = {
    "CLAUDE_MEM_DATA_DIR": ("~/.claude-mem", "Where everything lives (env only in practice)."),
    "CLAUDE_MEM_WORKER_HOST": ("127.0.0.1", "Address the worker binds."),
    "CLAUDE_MEM_WORKER_PORT": (_default_port(), "Port the worker binds (37700 + uid % 100)."),
    "CLAUDE_MEM_WORKER_URL": (
        "",
        "Team mode: the shared worker's base URL the hook client talks to.",
    ),
    "CLAUDE_MEM_API_TOKEN": ("", "Team mode: the per-user token the hook client sends."),
    "CLAUDE_MEM_CA_FILE": (
        "",
        "Team mode: CA bundle that verifies the shared worker's https certificate (empty = system CAs).",
    ),
    "CLAUDE_MEM_LOG_LEVEL": ("INFO", "DEBUG, INFO, WARN, ERROR or SILENT."),
    "CLAUDE_MEM_MODEL": (
        "claude-haiku-4-5-20251001",
        "Model that compresses tool uses (anthropic and claude providers).",
    ),
    "CLAUDE_MEM_PROVIDER": (
        "auto",
        "Observer model provider: auto, claude, anthropic, openrouter, gemini, openai-compatible or offline.",
    ),
    "CLAUDE_MEM_COMPRESSOR": (
        "auto",
        "Older alias of CLAUDE_MEM_PROVIDER: auto, api (= anthropic), offline or a provider name.",
    ),
    "CLAUDE_MEM_LANGUAGE": (
        "en",
        "Language observations and summaries are written in (en, zh, ja, de, es, fr…).",
    ),
    "CLAUDE_MEM_MODE": (
        "code",
        "claude-mem's mode; code--<lang> (e.g. code--zh) sets the language.",
    ),
    "CLAUDE_MEM_ANTHROPIC_API_KEY": ("", "anthropic provider: API key (else ANTHROPIC_API_KEY…)."),
    "CLAUDE_MEM_ANTHROPIC_BASE_URL": (
        "",
        "anthropic provider: base URL; empty = api.anthropic.com.",
    ),
    "CLAUDE_MEM_INHERIT_ANTHROPIC_ENV": (
        "false",
        "Let the observer use Claude Code's ANTHROPIC_BASE_URL / ANTHROPIC_AUTH_TOKEN from the environment.",
    ),
    "CLAUDE_MEM_CLAUDE_PATH": (
        "",
        "claude provider: the `claude` CLI (claude-mem's CLAUDE_CODE_PATH in settings.json too); empty = PATH; none = never.",
    ),
    "CLAUDE_MEM_CLAUDE_BASE_URL": ("", "claude provider: ANTHROPIC_BASE_URL given to the CLI."),
    "CLAUDE_MEM_CLAUDE_API_KEY": ("", "claude provider: ANTHROPIC_API_KEY given to the CLI."),
    "CLAUDE_MEM_CLAUDE_TIMEOUT_MS": ("120000", "claude provider: timeout of one `claude -p` run."),
    "CLAUDE_MEM_OPENROUTER_BASE_URL": (
        "",
        "openrouter: base URL; empty = https://openrouter.ai/api/v1.",
    ),
    "CLAUDE_MEM_OPENROUTER_API_KEY": ("", "openrouter: API key."),
    "CLAUDE_MEM_OPENROUTER_MODEL": ("xiaomi/mimo-v2-flash:free", "openrouter: model."),
    "CLAUDE_MEM_OPENROUTER_SITE_URL": ("", "openrouter: HTTP-Referer sent."),
    "CLAUDE_MEM_OPENROUTER_APP_NAME": ("claude-mem", "openrouter: X-Title sent."),
    "CLAUDE_MEM_GEMINI_BASE_URL": (
        "",
        "gemini: base URL; empty = Google's OpenAI-compatible endpoint.",
    ),
    "CLAUDE_MEM_GEMINI_API_KEY": ("", "gemini: API key."),
    "CLAUDE_MEM_GEMINI_MODEL": ("gemini-flash-latest", "gemini: model."),
    "CLAUDE_MEM_OPENAI_BASE_URL": ("", "openai-compatible: base URL (Ollama, LM Studio, vLLM…)."),
    "CLAUDE_MEM_OPENAI_API_KEY": ("", "openai-compatible: API key (a local server needs none)."),
    "CLAUDE_MEM_OPENAI_MODEL": ("gpt-4o-mini", "openai-compatible: model."),
    "CLAUDE_MEM_OPENAI_STREAM": ("false", "openai-compatible: stream the answer."),
    "CLAUDE_MEM_DAILY_TOKEN_BUDGET": (
        "2000000",
        "API tokens a day before falling back to offline; 0 = unlimited.",
    ),
    "CLAUDE_MEM_API_TIMEOUT_MS": ("30000", "Timeout of one compression request."),
    "CLAUDE_MEM_BATCH_SIZE": ("20", "Tool uses compressed in one request at most."),
    "CLAUDE_MEM_FIELD_CAP": ("16000", "Characters kept of one tool input or output field."),
    "CLAUDE_MEM_EXCERPT_CAP": (
        "2000",
        "Characters sent of a file read, written, or a command's output (head + tail).",
    ),
    "CLAUDE_MEM_API_RETRIES": ("3", "Retries of a compression request on 429, 5xx or a timeout."),
    "CLAUDE_MEM_API_BACKOFF_MS": ("1000", "First retry delay; doubles on every retry."),
    "CLAUDE_MEM_CLAIM_TIMEOUT_SECONDS": (
        "300",
        "Claimed events older than this are handed to another consumer.",
    ),
    "CLAUDE_MEM_SKIP_TOOLS": (
        "ListMcpResourcesTool,SlashCommand,Skill,TodoWrite,AskUserQuestion",
        "Tools never observed.",
    ),
    "CLAUDE_MEM_EXCLUDED_PROJECTS": (
        "",
        "Comma-separated globs of project paths that store nothing.",
    ),
    "CLAUDE_MEM_REDACT_SECRETS": ("true", "Redact API keys, tokens and passwords before storing."),
    "CLAUDE_MEM_CONTEXT_OBSERVATIONS": ("50", "Observations in the SessionStart index."),
    "CLAUDE_MEM_CONTEXT_SESSION_COUNT": (
        "10",
        "Sessions (summaries) the SessionStart index covers.",
    ),
    "CLAUDE_MEM_CONTEXT_TOKENS": ("2500", "Token budget of the SessionStart index."),
    "CLAUDE_MEM_READ_GATE": (
        "adaptive",
        "File-read gate: adaptive (deny while refusals pay off in the project), deny, context or off.",
    ),
    "CLAUDE_MEM_READ_GATE_WINDOW": (
        "8",
        "Adaptive gate: how many of the project's latest refusals (last 14 days) are weighed.",
    ),
    "CLAUDE_MEM_READ_GATE_TURN_TOKENS": (
        "6000",
        "Adaptive gate: what a refusal the model answers by reading again costs beyond its text (one more turn).",
    ),
    "CLAUDE_MEM_SESSION_MODEL": (
        "claude-opus-5-5",
        "Main model assumed for money in Stats when a session's transcript names none (Claude Code 2.1.332's default).",
    ),
    "CLAUDE_MEM_BILLING": (
        "auto",
        "How Stats labels money: api, subscription (API-equivalent cost) or auto (subscription unless an API key is set).",
    ),
    "CLAUDE_MEM_INSTALL_ROUTE": (
        "install",
        "How the agent loaded cmem's MCP server (tool names in gate text): install or plugin:<name>.",
    ),
    "CLAUDE_MEM_CODEX_SHELL_READ_GATE": (
        "context",
        "Codex read-only shell commands (cat, head, sed -n…): context, deny or off.",
    ),
    "CLAUDE_MEM_READ_GATE_MIN_BYTES": ("1500", "Files smaller than this always pass the gate."),
    "CLAUDE_MEM_READ_GATE_LIMIT": ("15", "Rows in the gate's timeline."),
    "CLAUDE_MEM_TIME_ZONE": (
        "",
        "IANA zone for the times shown to the agent; empty = the machine's local zone.",
    ),
    "CLAUDE_MEM_DELIVERABLES_ENABLED": ("true", "Copy files written outside the project at Stop."),
    "CLAUDE_MEM_DELIVERABLES_MAX_BYTES": ("20000000", "Largest deliverable copied."),
    "CLAUDE_MEM_RETENTION_DAYS": ("30", "Days raw captured payloads are kept; 0 = forever."),
    "CLAUDE_MEM_DATABASE_URL": ("", "Team mode: postgres://… instead of the embedded SQLite."),
    "CLAUDE_MEM_QUEUE_URL": ("", "Team mode: redis://… instead of Huey's SQLite queue."),
    "CLAUDE_MEM_REQUIRE_TOKEN": (
        "false",
        "Team mode: /api/ calls need a token (always on when the worker binds a non-loopback host).",
    ),
    "CLAUDE_MEM_PROJECT_IDENTITY": (
        "auto",
        "Project names: local (repository folder), remote (normalised git remote URL) or auto (remote in team mode).",
    ),
    "CLAUDE_MEM_EMBEDDINGS_MODEL": (
        "",
        "Empty: the bundled pair (WordLlama's table from its wheel with a MiniLM-distilled table"
        " shipped in cmem's). Or a local folder holding a static embedding model"
        " (tokenizer.json + model.safetensors, model2vec layout); nothing is downloaded.",
    ),
    "CLAUDE_MEM_SEMANTIC_INJECT": (
        "false",
        "On each prompt, add the few most related observations of earlier sessions.",
    ),
    "CLAUDE_MEM_SEMANTIC_INJECT_LIMIT": ("3", "Observations added per prompt at most."),
    "CLAUDE_MEM_VECTOR_INDEX": ("auto", "SQLite vector search: auto, scan or sqlite-vec."),
    "CLAUDE_MEM_HOOK_TIMEOUT_MS": ("2000", "How long a hook waits for the worker."),
}

# Bounds of every numeric setting (inclusive). A value outside is clamped, with a problem
# recorded and a log line: `CLAUDE_MEM_FIELD_CAP=-5` must not switch the cap off (a cap <= 0
# means "no cap" inside the sanitizer), nor a batch size of 0 stall compression.
INT_BOUNDS: dict[str, tuple[int, int]] = {
    "CLAUDE_MEM_WORKER_PORT": (1, 65535),
    "CLAUDE_MEM_DAILY_TOKEN_BUDGET": (0, 10**12),  # 0 = unlimited, as documented
    "CLAUDE_MEM_API_TIMEOUT_MS": (100, 600_000),
    "CLAUDE_MEM_BATCH_SIZE": (1, 500),
    "CLAUDE_MEM_FIELD_CAP": (100, 10_000_000),
    "CLAUDE_MEM_EXCERPT_CAP": (100, 100_000),
    "CLAUDE_MEM_API_RETRIES": (0, 10),
    "CLAUDE_MEM_API_BACKOFF_MS": (0, 60_000),
    "CLAUDE_MEM_CLAIM_TIMEOUT_SECONDS": (1, 86_400),
    "CLAUDE_MEM_CONTEXT_OBSERVATIONS": (0, 500),
    "CLAUDE_MEM_CONTEXT_SESSION_COUNT": (0, 100),
    "CLAUDE_MEM_CONTEXT_TOKENS": (0, 200_000),
    "CLAUDE_MEM_READ_GATE_MIN_BYTES": (0, 1_000_000_000),
    "CLAUDE_MEM_READ_GATE_LIMIT": (1, 500),
    "CLAUDE_MEM_DELIVERABLES_MAX_BYTES": (0, 1_000_000_000),
    "CLAUDE_MEM_RETENTION_DAYS": (0, 36_500),
    "CLAUDE_MEM_HOOK_TIMEOUT_MS": (50, 120_000),
}
# (key, raw) pairs already logged, so a bad value is reported once per process, not per call.
_clamp_logged: set[tuple[str, str]] = set()

_BOOL_TRUE = {"1", "true", "yes", "on"}
_BOOL_FALSE = {"0", "false", "no", "off", ""}


class SettingsError(ValueError):
    """A settings value that cannot be used; the message names the key."""


def data_dir() -> Path:
    raw = os.environ.get("CLAUDE_MEM_DATA_DIR") or "~/.claude-mem"
    # Keyed on the variable's value (HOME too, for the default): a request asks a dozen
    # times, and building and expanding the Path each time was a tenth of config.load().
    key = (raw, os.environ.get("HOME", ""))
    path = _data_dirs.get(key)
    if path is None:
        if len(_data_dirs) > 64:  # tests switch data dirs constantly
            _data_dirs.clear()
        path = _data_dirs[key] = Path(raw).expanduser()
    return path


_data_dirs: dict[tuple[str, str], Path] = {}


def ensure_data_dir() -> Path:
    path = data_dir()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def settings_path() -> Path:
    return _settings_file(data_dir())


@functools.lru_cache(maxsize=64)
def _settings_file(directory: Path) -> Path:
    # Joined once per data dir: the token and owner checks ask on every API request.
    return directory / "settings.json"


_problems: list[str] = []


def problems() -> list[str]:
    """What was wrong with settings.json at the last read (empty when all is well)."""
    return list(_problems)


# File times tick coarsely (a few ms): a file changed in place this recently could look
# unchanged to a stat, so a memo keyed on a file's stat trusts it only once it is older.
SETTLE_NS = 2_000_000_000


def stat_settled(changed_ns: int) -> bool:
    """True when a file last changed at `changed_ns` (st_mtime_ns, or its ctime when that is
    later) may be trusted unchanged while its stat is: the one rule of every stat memo here,
    in memory/owner_auth.py and in memory/team/auth.py."""
    return time.time_ns() - changed_ns > SETTLE_NS


# Parsed settings.json per path, keyed by (inode, mtime, size): every hook request reads the
# settings several times, and re-parsing an unchanged file cost ~0.15 ms each time.
# write_atomic renames a new file in, so a change always changes the inode.
_parsed: dict[str, tuple[tuple[int, int, int], dict[str, str], list[str]]] = {}


def read_file() -> dict[str, str]:
    """The settings file as a dict of strings; {} (and a recorded problem) when broken."""
    path = settings_path()
    try:
        st = path.stat()
    except OSError:
        _parsed.pop(str(path), None)  # load() keys its memo on this entry
        return _read_file_uncached()
    key = (st.st_ino, st.st_mtime_ns, st.st_size)
    cached = _parsed.get(str(path))
    if cached is not None and cached[0] == key and stat_settled(st.st_mtime_ns):
        _problems[:] = cached[2]
        return dict(cached[1])
    values = _read_file_uncached()
    _parsed[str(path)] = (key, dict(values), list(_problems))
    return values


def _read_file_uncached() -> dict[str, str]:
    values, found = settings_file.read(str(settings_path()))
    _problems[:] = found
    return values


def _env_overrides() -> tuple[tuple[str, str], ...]:
    """The CLAUDE_MEM_* variables of the environment, as a hashable snapshot.

    Iterates the names and looks up only the matching values: decoding every variable's
    value through os.environ.items() cost more than the rest of a hook ingest's settings
    work together."""
    env = os.environ
    return tuple((key, env[key]) for key in env if key.startswith("CLAUDE_MEM_"))


_merged: dict[tuple[object, ...], dict[str, str]] = {}


def load() -> dict[str, str]:
    """All settings with env > file > default applied (as at the start of the hook request
    being served, inside settings_snapshot())."""
    snapshot = _snapshot.get()
    if snapshot is not None:
        return dict(snapshot)
    file_values = read_file()
    env = _env_overrides()
    # The parsed file's cache entry stands for its contents while it is unchanged (a new
    # entry replaces it on every re-read): no sort of every value on each of the several
    # loads a request makes (issue 19: a fifth of an /api/health in the profile).
    parsed = _parsed.get(str(settings_path()))
    key: tuple[object, ...]
    if parsed is not None and stat_settled(parsed[0][1]):
        key = (env, "file", parsed[0])  # (inode, mtime, size) of a file settled on disk
    else:
        key = (env, tuple(sorted(file_values.items())))
    cached = _merged.get(key)
    if cached is None:
        cached = {name: default for name, (default, _) in SETTINGS.items()}
        cached.update(file_values)
        cached.update(env)
        if len(_merged) > 64:  # tests switch settings constantly; keep the memo small
            _merged.clear()
        _merged[key] = cached
    return dict(cached)


# One hook request's settings (memory.hooks.hook_handle): its services load them at several
# places (a gate decision four times, ~25 us each), and one request must see one version.
_snapshot: ContextVar[dict[str, str] | None] = ContextVar("cmem_settings_snapshot", default=None)


@contextlib.contextmanager
def settings_snapshot() -> Iterator[None]:
    """Within it, load() answers the settings as they were on entry (a copy each time);
    inside another snapshot, that one stands."""
    if _snapshot.get() is not None:
        yield
        return
    token = _snapshot.set(load())
    try:
        yield
    finally:
        _snapshot.reset(token)


def get(key: str, settings: dict[str, str] | None = None) -> str:
    values = settings if settings is not None else load()
    return values.get(key, SETTINGS.get(key, ("", ""))[0])


def get_int(key: str, settings: dict[str, str] | None = None) -> int:
    raw = get(key, settings).strip()
    try:
        value = int(raw)
    except ValueError:
        default = SETTINGS.get(key, ("0", ""))[0]
        _problems.append(f"{key}: {raw!r} is not a whole number; using {default}")
        value = int(default)
    bounds = INT_BOUNDS.get(key)
    if bounds is None:
        return value
    low, high = bounds
    clamped = min(max(value, low), high)
    if clamped != value:
        message = f"{key}: {value} is outside {low}..{high}; using {clamped}"
        _problems.append(message)
        if (key, raw) not in _clamp_logged:
            _clamp_logged.add((key, raw))
            log.warning("settings: %s", message)
    return clamped


def get_bool(key: str, settings: dict[str, str] | None = None) -> bool:
    raw = get(key, settings).strip().lower()
    if raw in _BOOL_TRUE:
        return True
    if raw in _BOOL_FALSE:
        return False
    default = SETTINGS.get(key, ("false", ""))[0]
    _problems.append(f"{key}: {raw!r} is not true/false; using {default}")
    return default.lower() in _BOOL_TRUE


def get_list(key: str, settings: dict[str, str] | None = None) -> list[str]:
    return [part.strip() for part in get(key, settings).split(",") if part.strip()]


def write_atomic(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write via a temp file in the same folder and rename, so readers never see half a file."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def save(updates: dict[str, str]) -> dict[str, str]:
    """Merge `updates` into settings.json (written atomically) and return the file's content."""
    current = read_file()
    if _problems and settings_path().exists():
        # Keep what the user wrote before replacing a broken file with a clean one.
        os.replace(settings_path(), settings_path().with_name("settings.json.broken"))
    current.update({k: str(v) for k, v in updates.items()})
    body = json.dumps(dict(sorted(current.items())), indent=2) + "\n"
    write_atomic(settings_path(), body.encode())
    if _snapshot.get() is not None:
        _snapshot.set(None)  # what was just saved applies at once, snapshot or not
    return current


def ensure_settings_file() -> None:
    """Create settings.json with every default on first use (claude-mem does the same)."""
    path = settings_path()
    if path.exists():
        return
    ensure_data_dir()
    defaults = {k: default for k, (default, _) in SETTINGS.items() if k != "CLAUDE_MEM_DATA_DIR"}
    with contextlib.suppress(FileExistsError):
        write_atomic(path, (json.dumps(defaults, indent=2) + "\n").encode())


# --- install route (memory/agents/install/routes.py records it) ---------------------------

MCP_TOOLS = ("search", "timeline", "get_observations", "smart_outline", "smart_unfold")


def install_route() -> str:
    """`plugin` when cmem reached Claude Code as a plugin, else `settings`."""
    path = str(data_dir() / "install-route")
    try:
        st = os.stat(path)
    except OSError:
        return "settings"
    # Every gate decision names tools by the route: the answer is kept per (inode, mtime,
    # size) of the file, re-read while the file is not settled (as read_file does).
    key = (st.st_ino, st.st_mtime_ns, st.st_size)
    cached = _install_routes.get(path)
    if cached is not None and cached[0] == key and stat_settled(st.st_mtime_ns):
        return cached[1]
    try:
        with open(path) as fh:
            route = "plugin" if fh.read().strip() == "plugin" else "settings"
    except OSError:
        return "settings"
    _install_routes[path] = (key, route)
    return route


_install_routes: dict[str, tuple[tuple[int, int, int], str]] = {}


def install_route_setting(settings: dict[str, str] | None = None) -> str:
    """The route for naming tools (memory/agents/tool_names.py): CLAUDE_MEM_INSTALL_ROUTE when
    set to anything but its default, else what the installer or the plugin recorded
    (`plugin` means the marketplace plugin `cmem`)."""
    explicit = get("CLAUDE_MEM_INSTALL_ROUTE", settings).strip()
    if explicit and explicit != "install":
        return explicit
    return "plugin:cmem" if install_route() == "plugin" else "install"
