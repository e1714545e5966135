"""`cmem install --codex` / `cmem uninstall --codex` / `cmem doctor`: cmem's hooks in Codex.

The hooks go into `$CODEX_HOME/hooks.json` (default `~/.codex`), the same JSON shape as
Claude Code's settings: unrelated hooks are kept, the file is backed up before it changes,
and a second install changes nothing. Every entry is synchronous: Codex kills async hooks
when `codex exec` exits, and capture survives a down worker through the spool anyway.

Codex runs a hook only once its exact definition is trusted, and skips untrusted ones
silently. Trust is recorded through `codex app-server` (JSON-RPC over stdio): `hooks/list`
gives each hook's key and current hash, `config/value/write` stores
`hooks.state."<key>" = {enabled, trusted_hash}` in config.toml, for cmem's entries only.
Without the binary, install prints what the user must do instead.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import shlex
import shutil
import subprocess
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory.agents.install import claude_code as installer
from memory.agents.install.check import Check
from memory.agents.install.codex_mcp import mcp_doctor_checks

# (Codex event, matcher or None, cmem event, timeout in seconds)
HOOKS: list[tuple[str, str | None, str, int]] = [
    # No matcher: resume and fork are answered `{}` by the worker, one rule in one place.
    ("SessionStart", None, "context", 30),
    ("UserPromptSubmit", None, "session-init", 30),
    # Only shell commands can read files in Codex; the worker lets complex ones pass.
    ("PreToolUse", "^Bash$", "file-context", 10),
    ("PostToolUse", None, "observation", 30),
    ("PostCompact", None, "compaction", 10),
    ("SubagentStart", None, "subagent-context", 30),
    ("Stop", None, "summarize", 60),
    # Codex clamps SessionEnd to 3 s whatever is asked.
    ("SessionEnd", None, "session-end", 3),
]
# How long `cmem install --codex` waits for each answer of `codex app-server` while it
# records trust. The first start of a freshly installed Codex (a ~420 MB native binary, cold
# on disk) took over 20 s once on this machine's CI while its warm starts take about one.
APP_SERVER_TIMEOUT_S = 60.0


class CodexTrustError(Exception):
    """`codex app-server` could not record trust; the message says why."""


@dataclass
class TrustReport:
    trusted: list[str] = field(default_factory=list)  # keys trusted now
    already: list[str] = field(default_factory=list)  # keys that were trusted before
    untrusted: list[str] = field(default_factory=list)  # keys still untrusted (doctor)
    warnings: list[str] = field(default_factory=list)  # what Codex said about the file


def codex_home() -> Path:
    base = os.environ.get("CODEX_HOME")
    return Path(base).expanduser() if base else Path.home() / ".codex"


def hooks_path(home: Path | None = None) -> Path:
    return (home or codex_home()) / "hooks.json"


def codex_binary() -> str | None:
    """The `codex` CLI: CMEM_CODEX_BIN, else the one on PATH."""
    explicit = os.environ.get("CMEM_CODEX_BIN")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return shutil.which("codex")


def hook_entries(*, command: str, data_dir: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """The matcher groups cmem adds, per Codex event. Codex runs `command` with bash -c."""
    entries: dict[str, list[dict[str, Any]]] = {}
    tail = f" --data-dir {shlex.quote(data_dir)}" if data_dir else ""
    for codex_event, matcher, event, timeout in HOOKS:
        hook = {
            "type": "command",
            "command": f"{shlex.quote(command)} hook codex {event}{tail}",
            "timeout": timeout,
        }
        group: dict[str, Any] = {"hooks": [hook]}
        if matcher is not None:
            group = {"matcher": matcher, **group}
        entries.setdefault(codex_event, []).append(group)
    return entries


def is_cmem_command(command: Any) -> bool:
    try:
        words = shlex.split(str(command or ""))
    except ValueError:
        return False
    return len(words) >= 3 and Path(words[0]).name == "cmem" and words[1:3] == ["hook", "codex"]


def _is_cmem_hook(hook: Any) -> bool:
    return isinstance(hook, dict) and is_cmem_command(hook.get("command"))


def hooks_install(
    *, path: Path, command: str, data_dir: str | None = None
) -> installer.InstallReport:
    """Add cmem's hooks to Codex's hooks.json (replacing older cmem entries), keeping the rest."""
    # Unlike ~/.claude, $CODEX_HOME may not exist yet on a machine that never ran Codex.
    path.parent.mkdir(parents=True, exist_ok=True)
    return installer.hooks_add(
        path=path,
        entries=hook_entries(command=command, data_dir=data_dir),
        is_ours=_is_cmem_hook,
        command=command,
    )


def hooks_uninstall(*, path: Path) -> installer.InstallReport:
    """Remove cmem's hooks from Codex's hooks.json and nothing else."""
    return installer.hooks_remove(path=path, is_ours=_is_cmem_hook)


def installed_commands(path: Path) -> list[str]:
    """The cmem hook commands in a Codex hooks.json (empty when none or unreadable)."""
    try:
        data, _ = installer.settings_read(path)
    except installer.InstallError:
        return []
    found = []
    for groups in (data.get("hooks") or {}).values():
        for group in groups if isinstance(groups, list) else []:
            for hook in group.get("hooks") or [] if isinstance(group, dict) else []:
                if _is_cmem_hook(hook):
                    found.append(str(hook["command"]))
    return found


# --- trust through `codex app-server` ---------------------------------------------------------


class AppServer:
    """A `codex app-server` child speaking JSON-RPC, one JSON object per line."""

    def __init__(self, *, binary: str, home: Path, cwd: Path) -> None:
        env = {**os.environ, "CODEX_HOME": str(home)}
        self.proc = subprocess.Popen(
            [binary, "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
        )
        self._next = 0

    def __enter__(self) -> AppServer:
        self.request(
            "initialize",
            {"clientInfo": {"name": "cmem", "title": None, "version": "1"}, "capabilities": None},
        )
        self._send({"jsonrpc": "2.0", "method": "initialized"})
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
        except OSError as exc:
            raise CodexTrustError(f"codex app-server stopped ({exc})") from None

    def request(self, method: str, params: dict[str, Any]) -> Any:
        self._next += 1
        ident = self._next
        self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        assert self.proc.stdout is not None
        deadline = time.monotonic() + APP_SERVER_TIMEOUT_S
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while True:
                if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                    raise CodexTrustError(f"codex app-server did not answer {method} in time")
                line = self.proc.stdout.readline()
                if not line:
                    raise CodexTrustError(f"codex app-server exited during {method}")
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if message.get("id") != ident:
                    continue  # notifications (configWarning…) and other answers
                if "error" in message:
                    raise CodexTrustError(
                        f"{method}: {message['error'].get('message', message['error'])}"
                    )
                return message.get("result")


def _same_file(a: Any, b: Path) -> bool:
    try:
        return Path(str(a)).resolve() == b.resolve()
    except OSError:
        return False


def _cmem_hooks_listed(
    server: AppServer, *, path: Path, cwd: Path, report: TrustReport
) -> list[dict[str, Any]]:
    listed = server.request("hooks/list", {"cwds": [str(cwd)]}) or {}
    out = []
    for entry in listed.get("data") or []:
        # A hooks.json Codex cannot parse (it refuses unknown fields) is listed as a warning.
        report.warnings += [
            str(w)
            for w in [*(entry.get("warnings") or []), *(entry.get("errors") or [])]
            if str(path) in str(w)
        ]
        for hook in entry.get("hooks") or []:
            if _same_file(hook.get("sourcePath"), path) and is_cmem_command(hook.get("command")):
                out.append(hook)
    return out


def hooks_trust(
    *, binary: str, home: Path, path: Path, cwd: Path | None = None, write: bool = True
) -> TrustReport:
    """Trust exactly cmem's entries of `path` (or, with write=False, only report them)."""
    report = TrustReport()
    where = cwd or Path.cwd()
    try:
        with AppServer(binary=binary, home=home, cwd=where) as server:
            for hook in _cmem_hooks_listed(server, path=path, cwd=where, report=report):
                key = str(hook.get("key", ""))
                if hook.get("trustStatus") in {"trusted", "managed"}:
                    report.already.append(key)
                    continue
                if not write or '"' in key or not hook.get("currentHash"):
                    report.untrusted.append(key)
                    continue
                server.request(
                    "config/value/write",
                    {
                        "keyPath": f'hooks.state."{key}"',
                        "value": {"enabled": True, "trusted_hash": hook["currentHash"]},
                        "mergeStrategy": "upsert",
                    },
                )
                report.trusted.append(key)
    except OSError as exc:
        raise CodexTrustError(f"cannot run {binary} app-server ({exc})") from None
    return report


TRUST_HINT = (
    "Codex skips untrusted hooks silently: start `codex` once interactively and trust the "
    "cmem hooks when it asks (or run `cmem install --codex` again with `codex` on the PATH)."
)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def trust_state_keys(path: Path) -> list[str]:
    """The hooks.state keys of cmem's entries, computed as Codex does (path:event:group:handler)."""
    try:
        data, _ = installer.settings_read(path)
    except installer.InstallError:
        return []
    keys = []
    for event, groups in (data.get("hooks") or {}).items():
        for g, group in enumerate(groups if isinstance(groups, list) else []):
            for h, hook in enumerate(group.get("hooks") or [] if isinstance(group, dict) else []):
                if _is_cmem_hook(hook):
                    keys.append(f"{path}:{_snake(event)}:{g}:{h}")
    return keys


def trust_recorded(home: Path, keys: list[str]) -> list[str]:
    """Keys without a trusted_hash in config.toml (no codex binary to ask: hashes unchecked)."""
    try:
        config = tomllib.loads((home / "config.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError):
        config = {}
    state = (config.get("hooks") or {}).get("state") or {}
    return [
        k
        for k in keys
        if not (
            isinstance(state.get(k), dict)
            and state[k].get("trusted_hash")
            and state[k].get("enabled", True)
        )
    ]


def codex_doctor_checks(*, home: Path | None = None) -> list[Any]:
    """`cmem doctor`: are cmem's Codex hooks installed and trusted? Nothing when not installed."""
    home = home or codex_home()
    path = hooks_path(home)
    if not installed_commands(path):
        return []
    checks = [Check("ok", f"cmem hooks in {path}"), *mcp_doctor_checks(home)]
    binary = codex_binary()
    if binary:
        try:
            listed = hooks_trust(binary=binary, home=home, path=path, write=False)
            untrusted = listed.untrusted
            checks += [Check("warn", f"codex says: {w}") for w in listed.warnings]
        except CodexTrustError as exc:
            return [
                *checks,
                Check("warn", f"could not ask codex about hook trust ({exc})", TRUST_HINT),
            ]
    else:
        untrusted = trust_recorded(home, trust_state_keys(path))
    if untrusted:
        checks.append(
            Check(
                "fail",
                f"{len(untrusted)} cmem Codex hook(s) not trusted: {', '.join(untrusted)}",
                TRUST_HINT,
            )
        )
    else:
        how = "" if binary else " (recorded in config.toml; no codex binary to check the hashes)"
        checks.append(Check("ok", f"cmem Codex hooks trusted{how}"))
    return checks
