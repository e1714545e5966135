"""What the model has seen of each file, per session (docs/reference/source-rules.md#file-views).

A view records what the model *received*, not what is on disk: a Read with offset/limit
or a truncated Read is a partial view, and only a full, unchanged view lets the gate say
"you already have this file". Edit/Write leave the model holding the new content in full.
`clear`/`compact` drop the session's views: that memory is gone from the model's context.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from memory.agents.base import HookEvent
from memory.models import FileView, Session
from memory.privacy.redaction import redact_text
from memory.projects import Project, remote_request
from memory.retrieval.outline.cache import outline_warm
from memory.runtime.compiled_sql import CompiledInsert
from memory.team import scope

# Hashing is only for staleness; a file this large is compared by mtime and size instead.
HASH_MAX_BYTES = 16 * 1024 * 1024
WRITE_TOOLS = {"Edit", "MultiEdit", "Write", "NotebookEdit"}


@dataclass(frozen=True)
class FileFacts:
    """A file as it is now: size and mtime from stat, sha256 only when someone asked for it."""

    path: str
    size: int
    mtime: float
    sha256: str = ""


def absolute_path(path: str, cwd: str) -> str:
    if not path:
        return ""
    joined = path if os.path.isabs(path) or not cwd else os.path.join(cwd, path)
    return os.path.normpath(joined)


def file_sha256(path: str) -> str:
    # Unbuffered, 64 KB at a time: a buffered 1 MB read allocated (and the kernel mapped)
    # a megabyte for every 2-6 KB source file the gate hashes (27-36 us -> 18-20 us).
    digest = hashlib.sha256()
    with open(path, "rb", buffering=0) as fh:
        while block := fh.read(1 << 16):
            digest.update(block)
    return digest.hexdigest()


def file_facts(
    path: str, *, remote: dict[str, dict[str, Any]] | None = None, with_hash: bool = False
) -> FileFacts | None:
    """Facts about a regular file, or None when it is missing or not a regular file.

    In team mode the worker cannot see the agent's disk: the hook client sends
    `cmem_file_facts` ({path: {size, mtime, sha256}}), used here instead of stat.
    """
    if remote and path in remote:
        raw = remote[path]
        try:
            return FileFacts(
                path=path,
                size=int(raw.get("size", 0)),
                mtime=float(raw.get("mtime", 0.0)),
                sha256=str(raw.get("sha256", "")),
            )
        except (TypeError, ValueError):
            return None
    if remote_request():
        # Team mode: a path a client names is the client's, never this server's. Stat or
        # hash it here and a hook naming /proc/self/environ, a 0600 file or the data dir's
        # worker.secret would store the server's own facts.
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    digest = ""
    if with_hash and st.st_size <= HASH_MAX_BYTES:
        try:
            digest = file_sha256(path)
        except OSError:
            digest = ""
    return FileFacts(path=path, size=st.st_size, mtime=st.st_mtime, sha256=digest)


def view_matches(view: FileView, facts: FileFacts) -> bool:
    """True when the file is still what the view recorded (hash first, else mtime + size)."""
    if view.content_hash and facts.sha256:
        return view.content_hash == facts.sha256
    return (
        view.size == facts.size and view.mtime is not None and abs(view.mtime - facts.mtime) < 1e-6
    )


def _read_partial(event: HookEvent) -> tuple[bool, int | None, int | None]:
    """(partial, offset, limit) of a Read: partial when sliced or when Claude Code truncated it."""
    offset = _as_int(event.tool_input.get("offset"))
    limit = _as_int(event.tool_input.get("limit"))
    partial = offset is not None or limit is not None
    response = event.tool_response if isinstance(event.tool_response, dict) else {}
    shown = response.get("file") if isinstance(response.get("file"), dict) else None
    if shown is not None:
        num, total = _as_int(shown.get("numLines")), _as_int(shown.get("totalLines"))
        start = _as_int(shown.get("startLine")) or 1
        if num is not None and total is not None and (num < total or start > 1):
            partial = True
    return partial, offset, limit


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _tool_path(event: HookEvent) -> str:
    raw = event.tool_input.get("file_path") or event.tool_input.get("notebook_path") or ""
    return absolute_path(raw, event.cwd) if isinstance(raw, str) else ""


def _known_facts(path: str, known: list[dict[str, Any]] | None) -> FileFacts | None:
    """The facts capture already took of `path` (its `cmem_files` entries), if it hashed it."""
    for entry in known or ():
        if entry.get("abs") == os.path.normpath(path) and entry.get("sha256"):
            return FileFacts(
                path=path,
                size=int(entry.get("size") or 0),
                mtime=float(entry.get("mtime") or 0.0),
                sha256=str(entry["sha256"]),
            )
    return None


def file_view_record_from_tool(
    *, session: Session, event: HookEvent, known: list[dict[str, Any]] | None = None
) -> FileView | None:
    """Record the view a Read gave the model, or the new content an Edit/Write left.

    1. Only Read and the write tools count, and only when the tool succeeded.
    2. Read: partial when offset/limit were given or the result was truncated.
       Edit/MultiEdit/Write/NotebookEdit: a full view of the file as it is now.
    3. The content is fingerprinted from disk (or the team-mode facts) right away: that is
       what the model now holds.
    4. A partial view of unchanged content never downgrades a full view the model holds.
    """
    if event.failed or (event.tool_name != "Read" and event.tool_name not in WRITE_TOOLS):
        return None
    path = _tool_path(event)
    if not path:
        return None
    if redact_text(path) != path:
        return None  # a path that holds a secret is never stored, and so never gated
    if event.tool_name == "Read":
        partial, offset, limit = _read_partial(event)
    else:
        partial, offset, limit = False, None, None
    facts = _known_facts(path, known) or file_facts(path, remote=event.file_facts, with_hash=True)
    fields: dict[str, Any] = {
        "content_hash": facts.sha256 if facts else "",
        "mtime": facts.mtime if facts else None,
        "size": facts.size if facts else None,
        "offset": offset,
        "limit": limit,
        "partial": partial,
        "seen": timezone.now(),
    }
    if facts is not None and facts.sha256 and not remote_request():
        # The refusal of this content in a later session shows its outline (recall/refusal.py).
        outline_warm(path, facts.sha256)
    existing = FileView.objects.filter(session=session, path=path).first()
    if existing is not None:
        if partial and not existing.partial and facts is not None and view_matches(existing, facts):
            return existing
        for name, value in fields.items():
            setattr(existing, name, value)
        existing.save(update_fields=[*fields])
        return existing
    try:
        with transaction.atomic():
            return FileView.objects.create(session=session, path=path, **fields)
    except IntegrityError:
        # Two tool results for one file raced; the later write wins, as it would in the agent.
        FileView.objects.filter(session=session, path=path).update(**fields)
        return FileView.objects.filter(session=session, path=path).first()


def file_views_reset(*, session: Session) -> int:
    """clear/compact: the model no longer holds any view. Returns how many were dropped."""
    deleted, _ = FileView.objects.filter(session=session).delete()
    return deleted


def session_ensure(*, event: HookEvent, project: Project, absent: bool = False) -> Session:
    """The event's Session row, created when this hook is the first to see the session
    (SessionStart and PreToolUse can come before UserPromptSubmit's session-init).
    `absent`: the caller's own lookup just found no row, so go straight to the insert."""
    lookup = {"platform": event.platform, "session_id": event.session_id}
    if not absent:
        # No ORDER BY (first() would add one by pk): SQLite then scans the table in pk
        # order instead of using the (platform, session_id) unique index (0.4 ms at 10k).
        session = next(iter(Session.objects.filter(**lookup)[:1]), None)
        if session is not None:
            scope.session_check(session.owner_id)  # another user's session id: nothing for it
            return session
    fields = {
        **lookup,
        "project": project.name,
        "project_root": project.root,
        "cwd": event.cwd,
        "transcript_path": event.transcript_path,
        "owner_id": scope.writer_id(),
    }
    values = {**fields, "started": timezone.now()}
    # ON CONFLICT DO NOTHING, not a savepoint around the INSERT: two statements fewer on
    # the gate's refusal (memory/runtime/compiled_sql.py insert_new).
    pk = _SESSION_INSERT.insert_new(**values)
    if pk is None:
        # session-init created it between our read and our insert.
        session = Session.objects.get(**lookup)
        scope.session_check(session.owner_id)
        return session
    session = Session(pk=pk, **values)
    session._state.adding, session._state.db = False, connection.alias
    return session


_SESSION_INSERT = CompiledInsert(Session)
