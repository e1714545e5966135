"""`cmem install` / `cmem uninstall`: cmem's hook entries in Claude Code's settings.json.

The settings file is the user's: every unrelated key and hook is kept as it was, the file is
backed up before it changes, an unparseable file is refused untouched, and running install
twice changes nothing the second time. cmem's own entries are recognised by their command
(`cmem`, or a path ending in `/cmem`) and `args` starting with `hook claude-code`.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memory import config

# (Claude Code event, matcher or None, cmem event, timeout in seconds, async)
HOOKS: list[tuple[str, str | None, str, int, bool]] = [
    ("SessionStart", "startup|resume|clear|compact", "context", 30, False),
    ("UserPromptSubmit", None, "session-init", 30, False),
    ("PostToolUse", "*", "observation", 30, True),
    # Synchronous, so failure recall's context reaches the model's next request (failures are
    # rare; the hook client's own timeout, CLAUDE_MEM_HOOK_TIMEOUT_MS, bounds the wait first).
    ("PostToolUseFailure", "*", "observation", 5, False),
    ("PreToolUse", "Read", "file-context", 10, False),
    ("Stop", None, "summarize", 60, False),
    # Without a timeout Claude Code gives SessionEnd hooks only 1.5 s.
    ("SessionEnd", None, "session-end", 10, False),
]


class InstallError(Exception):
    """The settings file cannot be changed safely; the message says why and what to do."""


@dataclass
class InstallReport:
    path: Path
    changed: bool
    backup: Path | None = None
    command: str = ""
    notes: list[str] = field(default_factory=list)


def claude_settings_path() -> Path:
    base = os.environ.get("CLAUDE_CONFIG_DIR")
    return (Path(base).expanduser() if base else Path.home() / ".claude") / "settings.json"


def own_executable() -> Path:
    """This installation's `cmem` script (next to the interpreter in a venv or pipx)."""
    candidate = Path(sys.executable).with_name("cmem")
    if candidate.exists():
        return candidate
    found = shutil.which("cmem")
    return Path(found) if found else candidate


def hook_command(path_env: str | None = None) -> str:
    """`cmem` when the PATH hooks see resolves it to this installation, else the absolute path."""
    own = own_executable()
    found = shutil.which(
        "cmem", path=path_env if path_env is not None else os.environ.get("PATH", "")
    )
    if found and Path(found).resolve() == own.resolve():
        return "cmem"
    return str(own)


# The -c line of the stdlib hook entry (memory/hookclient/entry.py): the package root is spelled in
# it, since `-S` leaves site-packages (and the editable install's path entry) off sys.path.
HOOK_ENTRY_CODE = (
    "import sys;sys.path.insert(0,{root!r});from memory.hookclient.entry import run;run()"
)
ENTRY_FLAGS = ["-I", "-S", "-c"]
# The entry's module before the hook client had a package of its own: hooks installed then
# still run (memory/hook_entry.py forwards) and are recognised as ours.
ENTRY_MODULES = ("memory.hookclient.entry", "memory.hook_entry")


def package_root() -> Path:
    """The folder holding this installation's `memory` package (site-packages or a checkout)."""
    return Path(__file__).resolve().parents[3]


def hook_entry_argv() -> list[str]:
    """What Claude Code's hooks run before `hook claude-code <event>`: this installation's
    interpreter with `-I -S` and the stdlib entry. It starts faster than the `cmem` console
    script (no site-packages scan or `.pth` files; `cmem bench hooks` / `bench lean` measure
    both) and needs no PATH lookup; it behaves exactly as `cmem hook`."""
    return [sys.executable, *ENTRY_FLAGS, HOOK_ENTRY_CODE.format(root=str(package_root()))]


def hook_args(hook: Any) -> list[str] | None:
    """The `hook claude-code <event> …` part of one of our installed hooks (either form:
    `cmem hook …` or the `-I -S` entry), else None."""
    if not isinstance(hook, dict):
        return None
    command = str(hook.get("command") or "")
    args = hook.get("args")
    if not isinstance(args, list):
        return None
    words = [str(a) for a in args]
    if command == "cmem" or command.endswith("/cmem"):
        return words
    if words[:3] == ENTRY_FLAGS and len(words) > 3 and any(m in words[3] for m in ENTRY_MODULES):
        return words[4:]
    return None


def entry_root(hook: Any) -> str | None:
    """The package root an installed `-I -S` entry puts on sys.path (for doctor), else None."""
    args = hook.get("args") if isinstance(hook, dict) else None
    if not isinstance(args, list) or len(args) < 4 or [str(a) for a in args[:3]] != ENTRY_FLAGS:
        return None
    head, sep, rest = str(args[3]).partition("sys.path.insert(0,")
    if not sep:
        return None
    literal = rest.split(")", 1)[0]

    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


def custom_data_dir() -> str | None:
    """This cmem's data dir when it is not the default one, else None.

    Hooks and the MCP server run in the agent's environment, which lacks a
    CLAUDE_MEM_DATA_DIR set in this shell: installed commands carry it (`--data-dir` after
    the hook's event, `env` for the MCP server) so they reach the data this cmem uses."""
    here = config.data_dir().expanduser().resolve()
    default = Path("~/.claude-mem").expanduser().resolve()
    return None if here == default else str(here)


def data_dir_args(data_dir: str | None) -> list[str]:
    return ["--data-dir", data_dir] if data_dir else []


def hook_data_dir(args: list[str]) -> str | None:
    """The data dir an installed hook's args name (None: the default one)."""
    for i, arg in enumerate(args[:-1]):
        if arg == "--data-dir":
            return args[i + 1]
    return None


def hook_entries(
    *, command: str, data_dir: str | None = None, entry: list[str] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """The matcher groups cmem adds, per Claude Code event (also used for the plugin folder).
    With `entry` (hook_entry_argv()) the hooks run it instead of `command`."""
    program, prefix = (entry[0], entry[1:]) if entry else (command, [])
    entries: dict[str, list[dict[str, Any]]] = {}
    for claude_event, matcher, event, timeout, is_async in HOOKS:
        hook: dict[str, Any] = {
            "type": "command",
            "command": program,
            "args": [*prefix, "hook", "claude-code", event, *data_dir_args(data_dir)],
            "timeout": timeout,
        }
        if is_async:
            hook["async"] = True
        group: dict[str, Any] = {"hooks": [hook]}
        if matcher is not None:
            group = {"matcher": matcher, **group}
        entries.setdefault(claude_event, []).append(group)
    return entries


def is_cmem_hook(hook: Any) -> bool:
    if not isinstance(hook, dict):
        return False
    command = str(hook.get("command") or "")
    args = hook.get("args")
    if isinstance(args, list):
        return (hook_args(hook) or [])[:2] == ["hook", "claude-code"]
    # Shell form, as an older install or a hand edit might have it.
    words = command.split()
    return (
        len(words) >= 3
        and (words[0] == "cmem" or words[0].endswith("/cmem"))
        and words[1:3] == ["hook", "claude-code"]
    )


def settings_read(path: Path) -> tuple[dict[str, Any], bytes | None]:
    """A hooks settings file as a dict plus its raw bytes (None when absent). Raises InstallError.

    Shared by Claude Code's settings.json and Codex's hooks.json (same shape)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}, None
    if not raw.strip():
        return {}, raw
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InstallError(
            f"{path} is not valid JSON ({exc}); fix or move it, then run this again. Nothing was changed."
        ) from None
    if not isinstance(data, dict):
        raise InstallError(
            f"{path} holds a JSON {type(data).__name__}, not an object; nothing was changed."
        )
    if "hooks" in data and not isinstance(data["hooks"], dict):
        raise InstallError(f'{path}: "hooks" is not an object; nothing was changed.')
    return data, raw


def hooks_without(
    hooks: dict[str, Any], *, is_ours: Callable[[Any], bool]
) -> tuple[dict[str, Any], bool]:
    """`hooks` minus the entries `is_ours` claims; groups and events that held only those go too."""
    out: dict[str, Any] = {}
    removed = False
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            out[event] = groups
            continue
        kept_groups = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list):
                kept_groups.append(group)
                continue
            kept = [h for h in inner if not is_ours(h)]
            if len(kept) != len(inner):
                removed = True
                if not kept:
                    continue
                group = {**group, "hooks": kept}
            kept_groups.append(group)
        if kept_groups or not groups:
            out[event] = kept_groups
        else:
            removed = True
    return out, removed


def settings_write(path: Path, data: dict[str, Any], original: bytes | None) -> Path | None:
    """Write `data` atomically (keeping the file's mode), backing up `original` first if any."""
    return write_with_backup(path, json_like(data, original).encode(), original)


def write_with_backup(path: Path, content: bytes, original: bytes | None) -> Path | None:
    """Write an agent's config file atomically, keeping its mode (0600 when new), after
    saving `original` (the bytes read before the change, if any) beside it as
    `<name>.bak.<time>`; returns the backup's path."""
    backup = None
    if original is not None:
        stamp = f"{datetime.now():%Y%m%d-%H%M%S}"
        backup = path.with_name(f"{path.name}.bak.{stamp}")
        n = 1
        while backup.exists():
            backup = path.with_name(f"{path.name}.bak.{stamp}.{n}")
            n += 1
        backup.write_bytes(original)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    config.write_atomic(path, content, mode=mode)
    return backup


def json_like(data: dict[str, Any], original: bytes | None) -> str:
    """`data` as JSON in the layout of the file it replaces: a one-line file stays one line
    (with its separators), an indented one keeps its indent (spaces or a tab), and the final
    newline is kept or left out as it was. A new file: two spaces. Only what cmem added or
    removed then shows in a diff of the user's file."""
    text = (original or b"").decode("utf-8-sig", errors="replace")
    body = text.strip()
    ending = "\n" if not text or text.endswith("\n") else ""
    if body and "\n" not in body:
        spaced = '": ' in body or ", " in body or body in ("{}", "")
        separators = (", ", ": ") if spaced else (",", ":")
        return json.dumps(data, ensure_ascii=False, separators=separators) + ending
    indent: str | int = 2
    for line in body.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            lead = line[: len(line) - len(stripped)]
            indent = "\t" if lead.startswith("\t") else len(lead)
            break
    return json.dumps(data, indent=indent, ensure_ascii=False) + ending


def hooks_add(
    *,
    path: Path,
    entries: dict[str, list[dict[str, Any]]],
    is_ours: Callable[[Any], bool],
    command: str,
) -> InstallReport:
    """Add `entries` to the hooks file at `path` (replacing older ones of ours), keeping the rest."""
    data, original = settings_read(path)
    hooks, _ = hooks_without(dict(data.get("hooks") or {}), is_ours=is_ours)
    for event, groups in entries.items():
        hooks[event] = [*(hooks.get(event) or []), *groups]
    new = {**data, "hooks": hooks}
    if original is not None and new == data:
        return InstallReport(path=path, changed=False, command=command)
    return InstallReport(
        path=path, changed=True, backup=settings_write(path, new, original), command=command
    )


def hooks_remove(*, path: Path, is_ours: Callable[[Any], bool]) -> InstallReport:
    """Remove the entries `is_ours` claims from the hooks file at `path`, and nothing else."""
    data, original = settings_read(path)
    if original is None or not isinstance(data.get("hooks"), dict):
        return InstallReport(path=path, changed=False)
    hooks, removed = hooks_without(data["hooks"], is_ours=is_ours)
    if not removed:
        return InstallReport(path=path, changed=False)
    new = {**data, "hooks": hooks}
    if not hooks:
        del new["hooks"]
    return InstallReport(path=path, changed=True, backup=settings_write(path, new, original))


def settings_install(
    *, path: Path, command: str, data_dir: str | None = None, entry: list[str] | None = None
) -> InstallReport:
    """Add cmem's hooks to `path` (replacing any older cmem entries), keeping everything else.
    `cmem install` passes `entry` (the `-I -S` hook entry); `command` is then only reported."""
    return hooks_add(
        path=path,
        entries=hook_entries(command=command, data_dir=data_dir, entry=entry),
        is_ours=is_cmem_hook,
        command=command,
    )


def settings_uninstall(*, path: Path) -> InstallReport:
    """Remove cmem's hooks from `path` and nothing else."""
    return hooks_remove(path=path, is_ours=is_cmem_hook)


def outdated_events(found: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The events whose installed cmem hook runs otherwise (async or not) than this cmem
    installs it: an older install (PostToolUseFailure was async before failure recall)."""
    wanted = {claude_event: is_async for claude_event, _, _, _, is_async in HOOKS}
    return sorted(
        event
        for event, hooks in found.items()
        if event in wanted and any(bool(h.get("async")) != wanted[event] for h in hooks)
    )


def installed_events(path: Path) -> dict[str, list[dict[str, Any]]]:
    """cmem's hooks found in `path`, per Claude Code event (for doctor). Raises InstallError."""
    data, _ = settings_read(path)
    found: dict[str, list[dict[str, Any]]] = {}
    for event, groups in (data.get("hooks") or {}).items():
        for group in groups if isinstance(groups, list) else []:
            for hook in group.get("hooks", []) if isinstance(group, dict) else []:
                if is_cmem_hook(hook):
                    found.setdefault(event, []).append(hook)
    return found


def file_remove_with_backup(path: Path, what: str) -> str:
    """Remove a file cmem wrote for an agent, keeping a `.<name>.removed` copy beside it;
    the line says what happened (`what`: e.g. "cmem Copilot CLI hooks")."""
    if not path.exists():
        return ""
    backup = path.with_name(f".{path.name}.removed")
    backup.write_bytes(path.read_bytes())
    path.unlink()
    return f"{what} removed: {path} (backup: {backup})"


def server_entry_report(path: Path, state: str, backup: Path | None, *, name: str) -> str:
    """What `server_entry_set` did to the MCP server `name` in `path`, in one line ("" when
    there was none to remove)."""
    if state == "absent":
        return ""
    if state == "removed":
        return f"MCP server {name!r} removed from {path} (backup: {backup})"
    if state == "unchanged":
        return f"MCP server {name!r} already registered in {path}"
    note = f" (backup: {backup})" if backup else ""
    return f"MCP server {name!r} registered in {path}{note}"


def server_entry_set(
    path: Path,
    *,
    key: str,
    name: str,
    entry: dict[str, Any] | None,
    new_file: dict[str, Any] | None = None,
) -> tuple[str, Path | None]:
    """Set (or, with None, remove) one MCP server `name` under `key` of a JSON config file,
    keeping the others: what the agents that list MCP servers in a file share. Returns
    ("set" | "removed" | "unchanged" | "absent", backup); `new_file` fields lead a file made
    from nothing (e.g. a `$schema`)."""
    data, original = settings_read(path)
    raw = data.get(key)
    servers: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if entry is None:
        if name not in servers:
            return "absent", None
        new = {**data, key: {k: v for k, v in servers.items() if k != name}}
        return "removed", settings_write(path, new, original)
    if servers.get(name) == entry:
        return "unchanged", None
    new = {**data, key: {**servers, name: entry}}
    if original is None and new_file:
        new = {**new_file, **new}
    return "set", settings_write(path, new, original)
