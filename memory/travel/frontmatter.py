"""Front matter: the YAML block at the top of each Markdown file, written deterministically
and read back strictly.

Writing sorts keys and never folds lines, so the same rows always give the same bytes.
Reading treats a file as untrusted input (it may have been edited by hand, or come from
another machine): the size is capped before anything is read, the bytes must be UTF-8,
the block must be a mapping, and every field an import uses is checked here with an error
that names the file.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any

import yaml
from django.utils.dateparse import parse_datetime

from memory.global_ids import is_gid

# A memory file is a few kilobytes; anything past this is not one (checked before reading).
MAX_FILE_BYTES = 1 << 20
# The kinds an import reads; `file` notes are derived from the others and skipped.
KINDS = ("session", "observation", "summary", "deliverable", "tombstone", "correction")
DERIVED_KINDS = ("file",)
_FENCE = "---\n"

# libyaml's C loader and dumper when PyYAML was built with it (about ten times faster);
# the pure-Python safe ones otherwise. Never the full loader: a file is untrusted.
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class MarkdownImportError(ValueError):
    """A file cannot be imported; the message names it. Nothing of the import was written."""


def time_text(value: datetime | None) -> str | None:
    """A time as files write it: UTC, always with microseconds, so two versions compare
    as text too (sync compares `Document.version` strings)."""
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def dump(data: dict[str, Any]) -> str:
    return str(
        yaml.dump(
            data,
            Dumper=_Dumper,
            sort_keys=True,
            allow_unicode=True,
            default_flow_style=False,
            width=1 << 30,  # never fold a long line: folding is where dumpers differ
        )
    )


def join(front: dict[str, Any], body: str) -> str:
    return f"{_FENCE}{dump(front)}{_FENCE}\n{body}"


def check_name(name: str) -> str:
    """A file's name (relative posix path) as an import may use it in messages and paths:
    no NUL, not absolute, no `..`, no backslash or drive."""
    if not isinstance(name, str) or not name or "\x00" in name:
        raise MarkdownImportError(f"{name!r}: not a usable file name")
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or "\\" in name or ":" in path.parts[0]:
        raise MarkdownImportError(f"{name!r}: file names must stay inside the folder")
    return name


def decode(name: str, raw: bytes) -> str:
    if len(raw) > MAX_FILE_BYTES:
        raise MarkdownImportError(
            f"{name}: {len(raw)} bytes, more than a memory file may hold ({MAX_FILE_BYTES})"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MarkdownImportError(
            f"{name}: not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    if "\x00" in text:
        raise MarkdownImportError(f"{name}: holds a NUL character")
    # Editors on Windows save CRLF and a byte-order mark; the files cmem writes have neither.
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")


def split(name: str, text: str) -> tuple[dict[str, Any], str]:
    """(front matter, body) of one file; MarkdownImportError when the block is missing or
    is not a YAML mapping."""
    if not text.startswith(_FENCE):
        raise MarkdownImportError(f"{name}: no front matter (the file must start with ---)")
    end = text.find("\n" + _FENCE, len(_FENCE) - 1)
    if end < 0:
        raise MarkdownImportError(f"{name}: the front matter is not closed (no second ---)")
    try:
        front = yaml.load(text[len(_FENCE) : end + 1], Loader=_Loader)
    except RecursionError:  # nesting the parser accepted but the constructor cannot hold
        raise MarkdownImportError(f"{name}: the front matter is nested too deeply") from None
    except yaml.YAMLError as exc:
        problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise MarkdownImportError(
            f"{name}: the front matter is not valid YAML ({problem})"
        ) from None
    if not isinstance(front, dict):
        raise MarkdownImportError(f"{name}: the front matter is not a set of fields")
    body = text[end + 1 + len(_FENCE) :]
    return front, body.removeprefix("\n")


class Fields:
    """One file's front matter, read field by field; each getter raises
    MarkdownImportError naming the file and the field."""

    def __init__(self, name: str, data: dict[str, Any]) -> None:
        self.name, self.data = name, data

    def fail(self, message: str) -> MarkdownImportError:
        return MarkdownImportError(f"{self.name}: {message}")

    def text(self, key: str, *, required: bool = False, limit: int = 20_000) -> str:
        value = self.data.get(key)
        if value is None or value == "":
            if required:
                raise self.fail(f"the field {key!r} is missing")
            return ""
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.fail(f"the field {key!r} must be text")
        value = str(value)
        if len(value) > limit:
            raise self.fail(f"the field {key!r} is longer than {limit} characters")
        return value

    def choice(self, key: str, allowed: tuple[str, ...], default: str) -> str:
        value = self.data.get(key, default)
        value = "" if value is None else value
        if value not in allowed:
            raise self.fail(f"the field {key!r} must be one of {', '.join(map(repr, allowed))}")
        return str(value)

    def flag(self, key: str) -> bool:
        value = self.data.get(key, False)
        if not isinstance(value, bool):
            raise self.fail(f"the field {key!r} must be true or false")
        return value

    def number(self, key: str) -> int | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
            raise self.fail(f"the field {key!r} must be a whole number")
        return value

    def gid(self, key: str = "gid", *, required: bool = True) -> str:
        value = self.data.get(key)
        if value is None and not required:
            return ""
        if not is_gid(value):
            raise self.fail(f"the field {key!r} is not a global id (26 characters, a ULID)")
        return str(value)

    def time(self, key: str, *, required: bool = True) -> datetime | None:
        value = self.data.get(key)
        if value is None:
            if required:
                raise self.fail(f"the field {key!r} is missing")
            return None
        if isinstance(value, datetime):  # a hand edit that dropped the quotes
            parsed: datetime | None = value
        elif isinstance(value, str):
            try:
                parsed = parse_datetime(value)
            except ValueError:
                parsed = None
        else:
            parsed = None
        if parsed is None:
            raise self.fail(f"the field {key!r} is not a time (ISO 8601)")
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)

    def strings(self, key: str, *, limit: int = 2_000, most: int = 200) -> list[str]:
        value = self.data.get(key) or []
        if (
            not isinstance(value, list)
            or len(value) > most
            or not all(isinstance(v, str) and len(v) <= limit for v in value)
        ):
            raise self.fail(f"the field {key!r} must be a list of short texts")
        return list(value)

    def mapping(self, key: str) -> Fields:
        value = self.data.get(key)
        if not isinstance(value, dict):
            raise self.fail(f"the field {key!r} is missing or not a set of fields")
        return Fields(f"{self.name} ({key})", value)

    def records(self, key: str, *, most: int = 500) -> list[Fields]:
        value = self.data.get(key) or []
        if (
            not isinstance(value, list)
            or len(value) > most
            or not all(isinstance(v, dict) for v in value)
        ):
            raise self.fail(f"the field {key!r} must be a list of sets of fields")
        return [Fields(f"{self.name} ({key})", v) for v in value]
