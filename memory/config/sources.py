"""Where settings come from: the data dir, `settings.json`, and env > file > default.

The file itself is read by memory.protocol.settings_file, the reader the hook client shares, so both
take the same grammar. A broken settings file never raises; it falls back to the defaults and
records the problem in `problems()` so `cmem doctor` and the dashboard can say which key is
wrong. The defaults are the registry's (memory/config/registry.py).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import tempfile
import time
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

from memory.config.registry import SETTINGS
from memory.protocol import settings_file

DEFAULT_DATA_DIR = SETTINGS["CLAUDE_MEM_DATA_DIR"][0]


def data_dir() -> Path:
    raw = os.environ.get("CLAUDE_MEM_DATA_DIR") or DEFAULT_DATA_DIR
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
    in memory/access/owner_auth.py and in memory/team/auth.py."""
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
    # loads a request makes (a fifth of an /api/health in the profile).
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
    current.update({key: str(value) for key, value in updates.items()})
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
    defaults = {
        key: default for key, (default, _) in SETTINGS.items() if key != "CLAUDE_MEM_DATA_DIR"
    }
    with contextlib.suppress(FileExistsError):
        write_atomic(path, (json.dumps(defaults, indent=2) + "\n").encode())


# --- install route (memory/agents/install/routes.py records it) ---------------------------
