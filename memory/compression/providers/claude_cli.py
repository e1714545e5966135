"""The `claude` provider: the user's installed Claude Code CLI, headless, as the observer.

Why the CLI's headless mode and not claude-agent-sdk: the SDK's wheels bundle their own
~400 MB copy of the CLI and it would still drive a CLI process per query; `claude -p
--output-format json` is the CLI's documented non-interactive interface, needs nothing
installed beyond what the user already runs, and returns the answer with its usage and cost.

Each request runs one `claude -p` process with:
- `--system-prompt` (cmem's observer prompt replaces Claude Code's), `--tools ""` (no tools),
  `--setting-sources ""` (no user/project/local settings, so no hooks and no permissions),
  `--strict-mcp-config` (no MCP servers), `--disable-slash-commands`,
  `--no-session-persistence` (nothing written to ~/.claude/projects), MAX_THINKING_TOKENS=0;
- a scratch working directory inside the data dir, so no project CLAUDE.md is found;
- CLAUDE_MEM_INTERNAL=1 in its environment: cmem's hook client ignores every hook of a
  process carrying it (claude-mem's marker), so the observer's own session is never observed
  even where hooks load anyway (managed settings, plugins);
- Claude Code's own ANTHROPIC_* / CLAUDE_CODE_* variables that a hook-spawned worker inherits
  are removed (unless CLAUDE_MEM_INHERIT_ANTHROPIC_ENV=true): the CLI uses its own login.
  CLAUDE_MEM_CLAUDE_BASE_URL / CLAUDE_MEM_CLAUDE_API_KEY, when set, are given to it as
  ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY (a gateway; the e2e test's fake API);
- one request at a time, across threads and processes (a file lock): a subscription's
  rate limit is shared with the user's own sessions.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from memory import config
from memory.compression.replies import LLMError, LLMReply, Usage, scrub
from memory.runtime import locks

NAME = "claude"
_lock = threading.Lock()
_auth_cache: dict[tuple[str, str], tuple[float, bool, str]] = {}
AUTH_CACHE_SECONDS = 300.0
_STRIPPED_PREFIXES = ("ANTHROPIC_", "CLAUDE_CODE_", "CLAUDECODE")


def binary() -> str:
    """The CLI: CLAUDE_MEM_CLAUDE_PATH, else claude-mem's CLAUDE_CODE_PATH from settings.json
    (never from the environment: CLAUDE_CODE_* variables are Claude Code's), else `claude` on
    PATH; '' when none. `none` disables the provider (the test suite sets it)."""
    raw = (
        config.get("CLAUDE_MEM_CLAUDE_PATH").strip()
        or config.read_file().get("CLAUDE_CODE_PATH", "").strip()
    )
    if raw.lower() == "none":
        return ""
    if raw:
        path = Path(raw).expanduser()
        return str(path) if path.is_file() and os.access(path, os.X_OK) else ""
    return shutil.which("claude") or ""


def _config_dir(env: dict[str, str]) -> Path:
    raw = env.get("CLAUDE_CONFIG_DIR") or os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(raw).expanduser() if raw else Path(env.get("HOME") or Path.home()) / ".claude"


def child_env() -> dict[str, str]:
    inherit = config.get_bool("CLAUDE_MEM_INHERIT_ANTHROPIC_ENV")
    env = {
        k: v
        for k, v in os.environ.items()
        if inherit or not k.startswith(_STRIPPED_PREFIXES)
        if not k.startswith("CLAUDE_MEM_")
    }
    env.update(
        {
            "CLAUDE_MEM_INTERNAL": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "MAX_THINKING_TOKENS": "0",
        }
    )
    url = config.get("CLAUDE_MEM_CLAUDE_BASE_URL").strip()
    key = config.get("CLAUDE_MEM_CLAUDE_API_KEY").strip()
    if url:
        env["ANTHROPIC_BASE_URL"] = url
    if key:
        env["ANTHROPIC_API_KEY"] = key
    return env


def login() -> tuple[bool, str]:
    """Is the CLI logged in? Its credentials file first (no process), else `claude auth
    status --json` (about 1-4 s, so its answer is kept for AUTH_CACHE_SECONDS)."""
    exe = binary()
    if not exe:
        return False, "no `claude` CLI on PATH (or CLAUDE_MEM_CLAUDE_PATH)"
    if config.get("CLAUDE_MEM_CLAUDE_API_KEY").strip():
        return True, f"`claude` CLI at {exe} with CLAUDE_MEM_CLAUDE_API_KEY"
    env = child_env()
    try:
        creds = json.loads((_config_dir(env) / ".credentials.json").read_text())
    except (OSError, ValueError):
        creds = None
    if isinstance(creds, dict) and isinstance(creds.get("claudeAiOauth"), dict):
        return True, f"`claude` CLI at {exe}, logged in (credentials file)"
    cache_key = (exe, str(_config_dir(env)))
    cached = _auth_cache.get(cache_key)
    if cached and time.monotonic() - cached[0] < AUTH_CACHE_SECONDS:
        return cached[1], cached[2]
    try:
        proc = subprocess.run(
            [exe, "auth", "status", "--json"],
            env=env,
            capture_output=True,
            timeout=20,
            stdin=subprocess.DEVNULL,
        )
        status = json.loads(proc.stdout.decode(errors="replace") or "{}")
    except (OSError, subprocess.TimeoutExpired, ValueError):
        status = {}
    if isinstance(status, dict) and status.get("loggedIn"):
        answer = (True, f"`claude` CLI at {exe}, logged in ({status.get('authMethod', 'login')})")
    else:
        answer = (False, f"the `claude` CLI at {exe} is not logged in (run `claude auth login`)")
    _auth_cache[cache_key] = (time.monotonic(), *answer)
    return answer


def configured(name: str = NAME) -> tuple[bool, str]:
    return login()


def model(name: str = NAME) -> str:
    return config.get("CLAUDE_MEM_MODEL") or config.SETTINGS["CLAUDE_MEM_MODEL"][0]


def sources(name: str = NAME) -> dict[str, str]:
    return {
        "key": "CLAUDE_MEM_CLAUDE_API_KEY"
        if config.get("CLAUDE_MEM_CLAUDE_API_KEY").strip()
        else "the CLI's own login",
        "base_url": "CLAUDE_MEM_CLAUDE_BASE_URL"
        if config.get("CLAUDE_MEM_CLAUDE_BASE_URL").strip()
        else "the CLI's default",
    }


def args(exe: str, system: str) -> list[str]:
    return [
        exe,
        "-p",
        "--output-format",
        "json",
        "--system-prompt",
        system,
        "--tools",
        "",
        "--setting-sources",
        "",
        "--strict-mcp-config",
        "--disable-slash-commands",
        "--no-session-persistence",
        "--model",
        model(),
    ]


def prompt_text(messages: list[dict[str, Any]]) -> str:
    """`-p` takes one prompt: a repair conversation is folded into it."""
    if len(messages) == 1:
        return str(messages[0]["content"])
    parts = []
    for message in messages:
        tag = "your_previous_reply" if message["role"] == "assistant" else "request"
        parts.append(f"<{tag}>\n{message['content']}\n</{tag}>")
    return "\n".join(parts)


def _classify(result: dict[str, Any], stderr: str, returncode: int) -> LLMError:
    said = " ".join(str(result.get(k) or "") for k in ("result", "subtype", "error")) + " " + stderr
    lowered = said.lower()
    status = result.get("api_error_status")
    if "not logged in" in lowered or "/login" in lowered or "invalid api key" in lowered:
        return LLMError(
            "the `claude` CLI is not logged in (run `claude auth login`)",
            retryable=False,
            status=401,
        )
    if status == 429 or "rate limit" in lowered or "usage limit" in lowered:
        # The CLI already retried; a subscription's limit lasts long: let the batch go offline.
        return LLMError(
            f"the `claude` CLI is rate-limited: {scrub(' '.join(said.split()))[:200]}",
            retryable=False,
            status=429,
        )
    retry = isinstance(status, int) and status >= 500
    return LLMError(
        f"`claude -p` failed (exit {returncode}): {scrub(' '.join(said.split()))[:240]}",
        retryable=retry,
        status=status if isinstance(status, int) else None,
    )


def _usage(result: dict[str, Any]) -> Usage:
    found = result.get("usage")
    raw: dict[str, Any] = found if isinstance(found, dict) else {}
    cost = result.get("total_cost_usd")
    return Usage(
        input=int(raw.get("input_tokens") or 0),
        output=int(raw.get("output_tokens") or 0),
        cache_read=int(raw.get("cache_read_input_tokens") or 0),
        cache_write=int(raw.get("cache_creation_input_tokens") or 0),
        cost_usd=float(cost) if isinstance(cost, int | float) else 0.0,
    )


def send(
    *, name: str, system: str, messages: list[dict[str, Any]], max_tokens: int, timeout: float
) -> LLMReply:
    exe = binary()
    if not exe:
        raise LLMError(login()[1], retryable=False)
    cwd = config.ensure_data_dir() / "observer-cwd"
    cwd.mkdir(mode=0o700, exist_ok=True)
    # Starting the CLI costs about a second on top of the request: give it room.
    limit = max(timeout, config.get_int("CLAUDE_MEM_CLAUDE_TIMEOUT_MS") / 1000)
    lock_path = config.data_dir() / "observer-claude.lock"
    with _lock, locks.exclusive(lock_path):
        try:
            proc = subprocess.run(
                args(exe, system),
                input=prompt_text(messages).encode(),
                cwd=cwd,
                env=child_env(),
                capture_output=True,
                timeout=limit,
            )
        except subprocess.TimeoutExpired:
            raise LLMError(f"`claude -p` did not answer in {limit:.0f} s", retryable=True) from None
        except OSError as exc:
            raise LLMError(f"cannot run the `claude` CLI: {exc}", retryable=False) from None
    out = proc.stdout.decode(errors="replace").strip()
    try:
        result = json.loads(out.splitlines()[-1]) if out else {}
    except ValueError:
        result = {"result": out[:300]}
    if not isinstance(result, dict):
        result = {}
    stderr = proc.stderr.decode(errors="replace")[-500:]
    if proc.returncode != 0 or result.get("is_error") or result.get("type") != "result":
        raise _classify(result, stderr, proc.returncode)
    served = next(iter(result.get("modelUsage") or {}), "") or model()
    return LLMReply(
        text=str(result.get("result") or ""),
        usage=_usage(result),
        model=str(served),
        stop_reason="max_tokens" if result.get("stop_reason") == "max_tokens" else "",
        provider=NAME,
    )
