"""`cmem doctor`: what is wrong with this installation, and the fix for each problem.

Each check returns Check rows: `ok`, `warn` (works, but worth knowing) or `fail` (something
the user must fix; the command exits nonzero). Secrets are only ever reported as present
or absent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.migrations.executor import MigrationExecutor

from memory import config
from memory.agents.install import claude_code as installer
from memory.agents.install import mcp as mcp_install
from memory.agents.install import routes
from memory.agents.install.agents import agents_doctor_checks
from memory.agents.install.check import Check
from memory.compression.providers import AUTO, OFFLINE, module, provider_choice
from memory.hooks import spool
from memory.housekeeping.retention import database_growth, retention_days
from memory.retrieval import embeddings
from memory.retrieval.embeddings import vector_index
from memory.runtime import credentials
from memory.travel.sync import crypto
from memory.travel.sync import engine as sync
from memory.travel.sync.state import state_load
from memory.worker import state as worker


def _path_checks(settings_path: Path) -> list[Check]:
    found = shutil.which("cmem")
    own = installer.own_executable()
    try:
        hooks = installer.installed_events(settings_path)
    except installer.InstallError:
        hooks = {}
    commands = {h.get("command", "") for group in hooks.values() for h in group}
    out = []
    if found:
        out.append(Check("ok", f"`cmem` on PATH: {found}"))
    elif "cmem" in commands:
        out.append(
            Check(
                "fail",
                "hooks run `cmem`, but `cmem` is not on the PATH",
                f"run `{own} install` (it writes the absolute path), or add {own.parent} to PATH",
            )
        )
    else:
        out.append(
            Check(
                "warn",
                "`cmem` is not on the PATH (hooks use the absolute path)",
                f"add {own.parent} to PATH to type `cmem`",
            )
        )
    for command in sorted(c for c in commands if c != "cmem"):
        if not os.access(command, os.X_OK):
            out.append(
                Check(
                    "fail",
                    f"hooks run {command}, which is not an executable file",
                    "run `cmem install` again from the installation you use",
                )
            )
    return out


def _entry_checks(hooks: dict[str, list[dict[str, Any]]]) -> list[Check]:
    """The `-I -S` hook entry that install writes runs here: its interpreter starts, finds
    cmem's package root without site-packages and answers `hook --help` (what a hook would
    run, short of an event)."""
    out: list[Check] = []
    seen: set[tuple[str, str]] = set()
    for hook in (h for group in hooks.values() for h in group):
        root = installer.entry_root(hook)
        if root is None:
            continue
        args = [str(a) for a in hook.get("args") or []]
        key = (str(hook.get("command") or ""), args[3])
        if key in seen:
            continue
        seen.add(key)
        try:
            answer = subprocess.run(
                [key[0], *args[:4], "hook", "--help"], capture_output=True, text=True, timeout=15
            )
            ok = answer.returncode == 0 and "usage: cmem hook" in answer.stdout
        except (OSError, subprocess.TimeoutExpired):
            ok = False
        if ok:
            out.append(Check("ok", f"hook entry resolves: {key[0]} -I -S, cmem from {root}"))
        else:
            out.append(
                Check(
                    "fail",
                    f"hooks run {key[0]} -I -S with cmem from {root}, which does not start",
                    "run `cmem install` again from the installation you use",
                )
            )
    return out


def _resolves(command: str) -> bool:
    return bool(shutil.which(command)) if "/" not in command else os.access(command, os.X_OK)


def _reach_checks(settings_path: Path) -> list[Check]:
    """Each installed command (hooks, MCP server) resolves and reaches this data dir."""
    try:
        hooks = installer.installed_events(settings_path)
    except installer.InstallError:
        return []
    here = config.data_dir().expanduser().resolve()
    default = Path("~/.claude-mem").expanduser().resolve()
    out: list[Check] = []
    elsewhere = set()
    for hook in (h for group in hooks.values() for h in group):
        args = [str(a) for a in hook.get("args") or []]
        named = installer.hook_data_dir(args)
        target = Path(named).expanduser().resolve() if named else default
        if target != here:
            elsewhere.add(str(target))
    if elsewhere:
        out.append(
            Check(
                "fail",
                f"hooks write to {', '.join(sorted(elsewhere))}, but this cmem uses {here}",
                "run `cmem install` from the shell (and CLAUDE_MEM_DATA_DIR) you use",
            )
        )
    elif hooks:
        out.append(Check("ok", f"hooks reach this data dir ({here})"))
    out.extend(_entry_checks(hooks))
    entry = mcp_install.mcp_registered(home=Path.home())
    if entry is not None:
        command = str(entry.get("command") or "")
        env = entry.get("env") if isinstance(entry.get("env"), dict) else {}
        named = env.get("CLAUDE_MEM_DATA_DIR") if env else None
        target = Path(named).expanduser().resolve() if named else default
        if not _resolves(command):
            out.append(Check("fail", f"the MCP server runs {command}, which does not resolve", "run `cmem install` again"))  # fmt: skip
        elif target != here:
            out.append(Check("fail", f"the MCP server reads {target}, but this cmem uses {here}", "run `cmem install` again"))  # fmt: skip
        else:
            out.append(Check("ok", f"MCP server: {command} mcp, data dir {here}"))
    return out


def _hook_checks(settings_path: Path) -> list[Check]:
    try:
        found = installer.installed_events(settings_path)
    except installer.InstallError as exc:
        return [
            Check("fail", str(exc), f"fix {settings_path} by hand (a backup may be next to it)")
        ]
    plugin = routes.plugin_installed(settings_path)
    if plugin and found:
        return [
            Check(
                "fail",
                f"cmem is installed twice: the plugin {plugin} and hooks in {settings_path} (every event would be captured twice)",
                f"keep one: `cmem uninstall --keep-plugin` (the plugin stays) or `claude plugin uninstall {plugin}`",
            )
        ]
    if plugin:
        return [Check("ok", f"hooks and MCP server come from the Claude Code plugin {plugin}")]
    expected = {event for event, *_ in installer.HOOKS}
    missing = sorted(expected - set(found))
    if len(missing) == len(expected):
        return [
            Check("fail", f"cmem hooks are not installed in {settings_path}", "run `cmem install`")
        ]
    if missing:
        return [
            Check(
                "fail",
                f"cmem hooks missing for {', '.join(missing)} in {settings_path}",
                "run `cmem install`",
            )
        ]
    outdated = installer.outdated_events(found)
    if outdated:
        return [
            Check(
                "warn",
                f"cmem hooks for {', '.join(outdated)} in {settings_path} come from an older "
                "cmem (a failed tool's hook runs async, so failure recall cannot reach the model)",
                "run `cmem install` again",
            )
        ]
    return [Check("ok", f"hooks installed for all {len(expected)} events in {settings_path}")]


def _settings_checks() -> list[Check]:
    settings = config.load()
    # A number setting that is not a number falls back to its default where it is read;
    # reading each once here records it, so doctor names the key.
    for record in config.registry.REGISTRY:
        if record.kind == "int":
            config.get_int(record.key, settings)
    problems = list(dict.fromkeys(config.problems()))
    if not problems:
        return [Check("ok", f"settings: {config.settings_path()}")]
    return [Check("fail", problem, f"edit {config.settings_path()}") for problem in problems]


def _worker_checks() -> list[Check]:
    address = worker.worker_address()
    answer = worker.health(address)
    if answer is None:
        return [
            Check(
                "warn",
                f"worker not running at {address.url}",
                "it starts on the next hook; or run `cmem start`",
            )
        ]
    version = answer.get("version")
    if version != config.VERSION:
        return [
            Check(
                "fail",
                f"worker runs cmem {version}, this is cmem {config.VERSION}",
                "run `cmem restart`",
            )
        ]
    return [Check("ok", f"worker {version} answers at {address.url}")]


def _database_checks() -> list[Check]:
    connection = connections[DEFAULT_DB_ALIAS]
    name = str(connection.settings_dict.get("NAME") or "")
    in_memory = name.startswith(("file:", ":memory:"))
    if connection.vendor == "sqlite" and name and not in_memory and not Path(name).exists():
        return [
            Check(
                "warn",
                f"database {name} not created yet",
                "the worker creates it when it starts: `cmem start`",
            )
        ]
    try:
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as exc:  # noqa: BLE001 - any failure here is the finding
        return [
            Check(
                "fail",
                f"database not reachable: {exc}",
                "check CLAUDE_MEM_DATABASE_URL and the data dir's permissions",
            )
        ]
    if pending:
        return [
            Check(
                "fail",
                f"{len(pending)} database migration(s) not applied",
                "run `cmem migrate` (or `cmem restart`, which migrates)",
            )
        ]
    return [
        Check("ok", f"database reachable ({connection.vendor}), migrations applied"),
        _database_size_check(),
    ]


def _database_size_check() -> Check:
    # Size and growth per day (memory/housekeeping/retention.py): claude-mem databases grew to 25-136 GB.
    try:
        growth = database_growth()
    except Exception as exc:  # noqa: BLE001 - a size we cannot read is worth a warning only
        return Check("warn", f"database size unknown: {exc}")
    days = retention_days()
    kept = f"raw payloads kept {days} day(s)" if days else "raw payloads kept forever"
    if days == 0 and growth.size > 1024**3:
        return Check(
            "warn",
            f"{growth.describe()}; {kept}",
            "set CLAUDE_MEM_RETENTION_DAYS (e.g. 30) and run `cmem prune`",
        )
    return Check("ok", f"{growth.describe()}; {kept}")


def _spool_checks() -> list[Check]:
    backlog = spool.spool_backlog()
    failed_dir = spool.spool_dir() / "failed"
    failed = len(list(failed_dir.iterdir())) if failed_dir.exists() else 0
    out = []
    if backlog:
        out.append(
            Check(
                "warn",
                f"{backlog} event(s) wait in the spool",
                "they are ingested when the worker runs: `cmem start`",
            )
        )
    else:
        out.append(Check("ok", "spool empty"))
    if failed:
        out.append(
            Check(
                "fail",
                f"{failed} spooled event(s) were refused",
                f"look at {failed_dir} (delete them once read)",
            )
        )
    return out


def _provider_checks() -> list[Check]:
    """Which provider writes the observations, and why (where its key and URL come from)."""
    choice = provider_choice()
    if choice.name == OFFLINE:
        if choice.requested not in {AUTO, OFFLINE}:
            return [
                Check(
                    "fail",
                    f"observer provider: offline, because {choice.why}",
                    "fix that provider's settings (docs/guide/observers.md), or "
                    "CLAUDE_MEM_PROVIDER=offline",
                )
            ]
        status = "ok" if choice.requested == OFFLINE else "warn"
        return [
            Check(
                status,
                f"observer provider: offline ({choice.why})",
                ""
                if status == "ok"
                else "log in to `claude`, or set an API key (docs/guide/observers.md)",
            )
        ]
    sources = module(choice.name).sources(choice.name)
    return [
        Check(
            "ok",
            f"observer provider: {choice.name} ({choice.why}); key from {sources['key']}, "
            f"base URL from {sources['base_url']}",
        )
    ]


def _search_checks() -> list[Check]:
    """Search by meaning needs the embeddings extra; without it search is keyword-only."""
    if embeddings.available():
        checks = [
            Check("ok", "search: hybrid (words and meaning; the embeddings extra is installed)")
        ]
        if connection.vendor == "sqlite":  # team mode's PostgreSQL has pgvector or its scan
            level, line = vector_index.describe()
            fix = "" if level == "ok" else "set CLAUDE_MEM_VECTOR_INDEX=auto (or scan)"
            checks.append(Check(level, line, fix))
        return checks
    return [
        Check(
            "warn",
            f"search: keyword only, search by meaning is off ({', '.join(embeddings.missing())} "
            "not installed)",
            embeddings.INSTALL_HINT,
        )
    ]


def _access_checks() -> list[Check]:
    """The data dir (0700), the worker's credential (0600) and its socket: who can reach memory."""
    fixes = {
        "data dir": f"chmod 700 {config.data_dir()}",
        "credential": "run `cmem start` (creates it 0600), or "
        f"chmod 600 {credentials.secret_path()}",
        "socket": "run `cmem restart` (the worker recreates it 0600)",
    }
    out = []
    for label, ok, detail in credentials.mode_report():
        # A missing credential is made by the next start; a readable one is a hole.
        status = "ok" if ok else ("warn" if detail.endswith("is missing") else "fail")
        out.append(Check(status, f"{label}: {detail}", "" if ok else fixes[label]))
    return out


def _sync_checks() -> list[Check]:
    """`cmem sync`, when set up: whether its remote is sealed (a git remote keeps all)."""
    remote = sync.remote_configured()
    if not remote:
        return []
    last = state_load().last_sync or "never"
    if not sync.encrypted():
        return [
            Check(
                "warn",
                f"sync to {remote} is not encrypted (last sync: {last}). {sync.UNENCRYPTED_WARNING}",
                "`cmem sync --remote URL --encrypt` with a new, empty remote",
            )
        ]
    if not crypto.key_text():
        return [
            Check(
                "fail",
                f"sync to {remote} is encrypted but the key is missing ({crypto.key_path()})",
                "`cmem sync --remote URL --key-file FILE` with the key of a synced machine",
            )
        ]
    return [Check("ok", f"sync: {remote}, encrypted, last sync {last}")]


def _agent_checks() -> list[Check]:
    """Gemini CLI, Copilot CLI, OpenCode: rows only for those cmem is installed in."""
    return agents_doctor_checks()


def doctor_checks(*, settings_path: Path | None = None) -> list[Check]:
    path = settings_path or installer.claude_settings_path()
    checks: list[Check] = []
    for group in (
        lambda: _path_checks(path),
        _settings_checks,
        lambda: _hook_checks(path),
        lambda: _reach_checks(path),
        _worker_checks,
        _access_checks,
        _database_checks,
        _spool_checks,
        _provider_checks,
        _search_checks,
        _sync_checks,
        _agent_checks,
    ):
        checks.extend(group())
    return checks
