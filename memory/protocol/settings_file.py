"""Reading `settings.json`: the one grammar that memory.config and the hook client share.

Stdlib only, and `json` only when it is needed: memory.config (Django's settings module,
every command) and the hook client (on the agent's critical path, where importing `json`
and `re` costs more than the rest of a hook) both read the file through `read()`.

The grammar: a JSON object of `CLAUDE_MEM_*` keys, or claude-mem's legacy nested
`{"env": {...}}`; strings are taken as they are, booleans as `true`/`false`, numbers as
their Python text (`750`, `1.5`); any other value is skipped with a problem naming the key;
a UTF-8 BOM is fine. A broken or unreadable file never raises: it reads as {} and the
problem says why. Only a regular file of at most MAX_BYTES is read: a FIFO, a device or a
directory at that path is refused without blocking.

`read()` first scans the layout cmem itself writes (`json.dumps(..., indent=2)`: `{`, one
`"KEY": value` per line, `}`) and keeps the result only when it cannot differ from what
`json` would read (no escapes, no control characters, plain integers); anything else
(escapes, nesting, other layouts, garbage) is parsed by `json`. tests/config/test_settings_file.py
holds the scan to that, with generated files.
"""

# ruff: noqa: I002 - no `from __future__ import annotations`: it imports the `__future__`
# module (~0.3 ms) on the hook client's path, and every annotation here evaluates on 3.11.

import stat

# The C module under `os`: importing `os` itself costs 1.2 ms on the hook client's path
# (memory/hookclient/client.py), and open/fstat/read/close are all this module calls.
try:
    import posix as os
except ImportError:  # not POSIX
    import os  # type: ignore[no-redef]

# Far above any real settings file (cmem's own is ~2 KB); a bigger one is refused unread.
MAX_BYTES = 1 << 20
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def read(path: str) -> tuple[dict[str, str], list[str]]:
    """(values, problems) of the settings file at `path`; a missing file is ({}, [])."""
    try:
        raw = read_bytes(path)
    except FileNotFoundError:
        return {}, []
    except OSError as exc:
        return {}, [f"{path}: cannot read ({exc.strerror or exc}); using defaults"]
    values = scan(raw)
    if values is not None:
        return values, []
    return parse(raw, path)


def read_bytes(path: str) -> bytes:
    """The file's bytes. O_NONBLOCK so that opening a FIFO cannot wait for a writer; fstat
    on the open descriptor (not the path, which could be swapped) refuses what is not a
    regular file, and the size cap keeps a huge file out of memory."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(0, "not a regular file")
        if st.st_size > MAX_BYTES:
            raise OSError(0, f"larger than {MAX_BYTES} bytes")
        chunks = []
        left = MAX_BYTES + 1
        while left > 0:
            chunk = os.read(fd, min(left, max(st.st_size + 1, 65536)))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    if left <= 0:  # it grew past the cap while we read
        raise OSError(0, f"larger than {MAX_BYTES} bytes")
    return b"".join(chunks)


def scan(raw: bytes) -> dict[str, str] | None:
    """The values of a file in cmem's own one-key-per-line layout, or None when the file is
    anything else (then `parse` decides). Never wrong, only sometimes silent: every rule
    below declines what `json` could read differently. Whole-text checks first, in C: this
    runs on every hook."""
    if raw[:3] == b"\xef\xbb\xbf":  # what "utf-8-sig" strips, without loading that codec
        raw = raw[3:]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    # No escapes, and no control character but JSON's whitespace (tab, CR, LF; tabs and CRs
    # inside a string are refused below).
    if "\\" in text or not text.replace("\n", "").replace("\r", "").replace("\t", "").isprintable():
        return None
    # JSON's whitespace is exactly space, tab, CR and LF; str.strip() would take more.
    lines = [s for s in (line.strip(" \t\r") for line in text.split("\n")) if s]
    if len(lines) < 2 or lines[0] != "{" or lines[-1] != "}":
        return None
    out: dict[str, str] = {}
    last = len(lines) - 2
    for i in range(1, last + 1):
        parts = lines[i].split('"')
        comma = "," if i < last else ""
        if parts[0] or "\t" in parts[1] or "\r" in parts[1]:
            return None
        if len(parts) == 5:  # "KEY": "VALUE",
            value = parts[3]
            if (
                parts[2].strip(" \t\r") != ":"
                or parts[4].strip(" \t\r") != comma
                or "\t" in value
                or "\r" in value
            ):
                return None
        elif len(parts) == 3:  # "KEY": true,  "KEY": 750,
            rest = parts[2].strip(" \t\r")
            if comma:
                if rest[-1:] != ",":
                    return None
                rest = rest[:-1]
            if rest[:1] != ":":
                return None
            value = rest[1:].strip(" \t\r")
            if value not in ("true", "false"):
                digits = value[1:] if value[:1] == "-" else value
                # JSON integers only (ASCII digits, no leading zero); floats go to json.
                if not (digits.isascii() and digits.isdigit()) or (
                    digits[0] == "0" and digits != "0"
                ):
                    return None
                try:
                    value = str(int(value))  # "-0" is "0", as json reads it
                except ValueError:  # past int's digit limit: json refuses it too
                    return None
        else:
            return None
        out[parts[1]] = value
    return out


def parse(raw: bytes, path: str = "settings.json") -> tuple[dict[str, str], list[str]]:
    """The full parse with `json`: (values, problems)."""
    # hook path: scan() reads the file without json; only the full parse pays for it
    import json

    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        return {}, [f"{path}: not valid JSON ({exc}); using defaults"]
    if isinstance(data, dict) and isinstance(data.get("env"), dict):
        data = data["env"]  # claude-mem's legacy nested layout
    if not isinstance(data, dict):
        return {}, [f"{path}: expected a JSON object of CLAUDE_MEM_* keys; using defaults"]
    out: dict[str, str] = {}
    problems: list[str] = []
    for key, value in data.items():
        if isinstance(value, str):
            out[key] = value
        elif isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, int | float):
            out[key] = str(value)
        else:
            problems.append(f"{key}: expected a string value in {path}; using the default")
    return out, problems
