"""What an import reads: the Markdown files of a tree, taken safely from disk, and what
each one says, every field checked for its kind.

A file is untrusted input (a hand edit, another machine): no symlink is followed, a size
is checked before reading, and the text an import stores is stripped of private parts and
redacted as captured text is. Anything wrong raises MarkdownImportError naming the file.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory.models import Observation, ObservationFile, Session
from memory.privacy.redaction import Sanitizer
from memory.travel import bodies
from memory.travel.frontmatter import (
    DERIVED_KINDS,
    KINDS,
    MAX_FILE_BYTES,
    Fields,
    MarkdownImportError,
    check_name,
    decode,
    split,
)

_TITLE_MAX = 300
# The choices a field accepts, read once (an enum's `.values` builds a list per call).
_TYPES = tuple(Observation.Type.values)
_STATUSES = tuple(Observation.Status.values)
_CERTAINTIES = tuple(Observation.Certainty.values)
_ORIGINS = tuple(Observation.Origin.values)
_SCOPES = tuple(Observation.Scope.values)
_ROLES = tuple(ObservationFile.Role.values)
_SESSION_STATUSES = tuple(Session.Status.values)
# The kinds of row a tombstone file may forget (what `forget` leaves tombstones for).
FORGETTABLE = ("observation", "summary")


@dataclass
class ParsedFile:
    """One file as an import will apply it: `values` holds its checked fields."""

    name: str
    kind: str
    gid: str
    project: str
    author: str
    values: dict[str, Any]


def _session_ref(f: Fields) -> dict[str, Any]:
    return {
        "gid": f.gid(),
        "platform": f.text("platform", required=True, limit=32),
        "id": f.text("id", required=True, limit=200),
        "started": f.time("started"),
    }


def parse_file(name: str, raw: bytes, sanitizer: Sanitizer) -> ParsedFile | None:
    """One file, checked field by field; None for what an import does not read: derived
    notes, and a person's own notes in the same vault (no front matter, or front matter
    with neither a `gid` nor a `kind`)."""
    check_name(name)
    text = decode(name, raw)
    if not text.startswith("---\n"):
        return None
    front, body = split(name, text)
    if "gid" not in front and "kind" not in front:
        return None
    f = Fields(name, front)
    kind = f.text("kind", required=True, limit=20)
    if kind in DERIVED_KINDS:
        return None
    if kind not in KINDS:
        raise f.fail(f"unknown kind {kind!r} (one of {', '.join(KINDS)})")
    gid = f.gid()
    project = f.text("project", required=kind not in ("tombstone", "correction"), limit=200)
    author = f.text("author", limit=150)
    clean = sanitizer.text
    values: dict[str, Any] = {}
    if kind == "observation":
        try:
            said = clean_text(bodies.observation_read(body), clean)
        except ValueError as exc:
            raise f.fail(str(exc)) from None
        if not said["title"]:
            raise f.fail("the title is empty (once private parts are removed)")
        if len(said["title"]) > _TITLE_MAX:
            raise f.fail(f"the title is longer than {_TITLE_MAX} characters")
        values = {
            **said,
            "session": _session_ref(f.mapping("session")),
            "type": f.choice("type", _TYPES, "discovery"),
            "created": f.time("created"),
            "edited": f.time("edited", required=False),
            "status": f.choice("status", _STATUSES, "current"),
            "status_reason": clean(f.text("status_reason")),
            "superseded_by": f.gid("superseded_by", required=False),
            "pinned": f.flag("pinned"),
            "demoted": f.flag("demoted"),
            "certainty": f.choice("certainty", _CERTAINTIES, ""),
            "origin": f.choice("origin", _ORIGINS, "observer"),
            "person_edited": f.flag("person_edited"),
            "topic": clean(f.text("topic", limit=200)),
            "scope": f.choice("scope", _SCOPES, "project"),
            "concepts": [clean(c) for c in f.strings("concepts", limit=200)],
            "prompt": f.number("prompt"),
            "tool": f.text("tool", limit=200),
            "hash": f.text("hash", limit=32),
            "files": [
                (
                    r.text("path", required=True, limit=4096),
                    r.choice("role", _ROLES, "read"),
                    r.text("hash", limit=64),
                )
                for r in f.records("files")
            ],
        }
    elif kind == "summary":
        values = {
            **{k: clean(v) for k, v in bodies.summary_read(body).items()},
            "session": _session_ref(f.mapping("session")),
            "created": f.time("created"),
            "prompt": f.number("prompt"),
        }
    elif kind == "session":
        prompts = []
        for number, when, prompt in bodies.session_read(body):
            moment = Fields(name, {"created": when}).time("created")
            prompts.append((number, moment, clean(prompt)))
        values = {
            "platform": f.text("platform", required=True, limit=32),
            "id": f.text("id", required=True, limit=200),
            "started": f.time("started"),
            "ended": f.time("ended", required=False),
            "status": f.choice("status", _SESSION_STATUSES, "completed"),
            "project_root": f.text("project_root", limit=4096),
            "cwd": f.text("cwd", limit=4096),
            "model": f.text("model", limit=120),
            "prompts": prompts,
        }
    elif kind == "deliverable":
        values = {
            "session": _session_ref(f.mapping("session")),
            "created": f.time("created"),
            "prompt_number": f.number("prompt"),
            "original_path": f.text("original_path", required=True, limit=4096),
            "stored_path": _stored_path(f),
            "size": f.number("size") or 0,
            "sha256": f.text("sha256", required=True, limit=64),
            "content_type": f.text("content_type", limit=200),
            "attached": f.flag("attached"),
            "title": clean(f.text("title", limit=200)),
            "note": clean(f.text("note")),
        }
    elif kind == "tombstone":
        values = {"forgets": f.choice("forgets", FORGETTABLE, "observation")}
    return ParsedFile(name, kind, gid, project, author, values)


def _stored_path(f: Fields) -> str:
    """Where the bytes would be under the deliverables folder: never outside it."""
    value = f.text("stored_path", limit=4096)
    if value:
        try:
            check_name(value)
        except MarkdownImportError:
            raise f.fail(
                "the field 'stored_path' must stay inside the deliverables folder"
            ) from None
    return value


def clean_text(text: dict[str, Any], clean: Any) -> dict[str, Any]:
    return {
        "title": bodies.one_line(clean(text["title"])),
        "subtitle": clean(text["subtitle"]).strip(),
        "facts": [t for t in (clean(str(x)).strip() for x in text["facts"]) if t],
        "narrative": clean(text["narrative"]).strip(),
    }


def tree_files(root: Path) -> list[tuple[str, bytes]]:
    """The Markdown files under `root` as (relative name, bytes), read safely: hidden
    folders (.obsidian, .git) skipped, no symlink followed, sizes checked before reading."""
    if not root.is_dir():
        raise MarkdownImportError(f"{root}: not a folder")
    out = []
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for d in dirs:
            if (Path(folder) / d).is_symlink():
                rel = (Path(folder) / d).relative_to(root).as_posix()
                raise MarkdownImportError(f"{rel}: a symlink; an import never follows one")
        for name in sorted(names):
            if name.startswith(".") or not name.endswith(".md"):
                continue
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            out.append((rel, _read(path, rel)))
    return out


def _read(path: Path, rel: str) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if path.is_symlink():
            raise MarkdownImportError(f"{rel}: a symlink; an import never follows one") from None
        raise MarkdownImportError(f"{rel}: cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise MarkdownImportError(f"{rel}: not a regular file")
        if info.st_size > MAX_FILE_BYTES:
            raise MarkdownImportError(
                f"{rel}: {info.st_size} bytes, more than a memory file may hold ({MAX_FILE_BYTES})"
            )
        return fh.read(MAX_FILE_BYTES + 1)
