"""The hook client: the program an agent runs on every event, stdlib only.

Its own room because it is a second program: it must never import Django or anything of the
worker (the `hookclient` import contracts in pyproject.toml). `entry` is what the installed
hook line runs; `client` is the local fast path (one POST over the worker's Unix socket);
`remote` is team mode (a worker at `CLAUDE_MEM_WORKER_URL`); `slow_path` is the one module
allowed to import the worker's privacy rules and the Stop handover, and it is imported only
when the worker is down or a turn's files must travel with the event. The formats the client
shares with the worker (the settings file's grammar, the spool's file names, which
addresses are loopback) live in memory/protocol/.

This package's own body holds what `client` and `remote` both need (the environment, the
settings, the data dir and the errors), so neither imports the other at import time: the
package is imported anyway, so this costs the hook nothing.
"""

# ruff: noqa: I002 - no `from __future__ import annotations`: every import is paid on each hook.

import sys

# `os` is not imported on the hook's path: under `-I -S` nothing has imported it yet, and
# its module body (with posixpath and _collections_abc) is 1.2 ms of a 10 ms interpreter
# start. The path needs the environment, a join and the C `posix` calls only;
# the spool and the worker start, which need more, import `os` then (`hookclient.os`, via
# the client module's __getattr__, is that module).
try:
    import posix as _posix
except ImportError:  # not POSIX: `os` it is
    import os as _posix  # type: ignore[no-redef]


class HookFailure(Exception):
    """Why this hook could not talk to the worker; the message ends up on stderr."""


class WorkerDown(HookFailure):
    """Nothing answered: the event should be spooled and the worker started."""


# --- settings (env > settings.json > default) ----------------------------------------------


_environ: dict[str, str] = {}


def env(key: str) -> str | None:
    """`os.environ.get(key)`: os.environ itself once anything imported `os` (it may have been
    changed since start: `--data-dir`, tests); else the environment the process began with."""
    os_module = sys.modules.get("os")
    if os_module is not None:
        return os_module.environ.get(key)  # type: ignore[no-any-return]
    if not _environ:
        _environ.update(
            (k.decode("utf-8", "surrogateescape"), v.decode("utf-8", "surrogateescape"))
            for k, v in _posix.environ.items()  # type: ignore[union-attr]
        )
    return _environ.get(key)


def env_set(key: str, value: str) -> None:
    """`os.environ[key] = value` without importing `os`: the process's C environment (what
    a spawned worker inherits), `posix.environ` (what `os.environ` is built from if anything
    imports `os` later) and the copy `env()` reads."""
    os_module = sys.modules.get("os")
    if os_module is not None:
        os_module.environ[key] = value
        return
    _posix.putenv(key, value)
    _posix.environ[key.encode("utf-8", "surrogateescape")] = value.encode(  # type: ignore[union-attr]
        "utf-8", "surrogateescape"
    )
    if _environ:
        _environ[key] = value


def data_dir() -> str:
    raw = env("CLAUDE_MEM_DATA_DIR") or "~/.claude-mem"
    if raw[:1] != "~":
        return raw
    home = env("HOME")
    if home and (raw == "~" or raw[1] == "/"):
        return (home.rstrip("/") + raw[1:]) or "/"  # what os.path.expanduser does
    import os  # `~user`, or no HOME: the password database

    return os.path.expanduser(raw)


def _join(folder: str, name: str) -> str:
    return folder + name if folder.endswith("/") else f"{folder}/{name}"


_file_values: list[dict[str, str]] = []


def file_settings() -> dict[str, str]:
    """settings.json as memory.config reads it, read once per process."""
    if not _file_values:
        # hook path: settings.json is read once, and only when a setting is asked for
        from memory.protocol.settings_file import read

        _file_values.append(read(_join(data_dir(), "settings.json"))[0])
    return _file_values[0]


def forget_settings() -> None:
    """Read settings.json again at the next `setting()` (a hook is one process; tests are not)."""
    _file_values.clear()


def setting(key: str, default: str = "") -> str:
    value = env(key)
    if value is not None:
        return value
    return file_settings().get(key, default)


def error_reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):  # socket.timeout is TimeoutError since 3.10
        return "timed out"
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
