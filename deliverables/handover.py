"""Deliverable bytes a hook handed over, and files the agent attached with `work_state_write`.

The hook client reads a file's bytes itself when the worker cannot (memory/capture/handover.py
says when and within which bounds): a Stop spooled while the worker was down, a Stop sent to
a remote team worker, and every `work_state_write` tool call. The bytes travel in the event
as `cmem_handover`; this module records them under the same rules as a copy from disk:
secret locations refused (by the path named), the size cap, text redacted before storing.
A remote worker never falls back to reading a path from its own disk.
"""

from __future__ import annotations

import base64
import binascii
import io
import logging
import os
from pathlib import Path
from typing import Any

from django.utils import timezone

from deliverables.models import Deliverable
from deliverables.services import (
    copy_into,
    deliverable_record,
    deliverables_root,
    outside_project,
    safe_segment,
    store_stream,
)
from memory import config
from memory.agents.base import HookEvent
from memory.agents.tool_names import is_cmem_tool
from memory.capture.turn_files import attachments_from_transcript
from memory.models import Prompt, Session
from memory.privacy import redaction
from memory.privacy.secret_locations import refusal_reason
from memory.projects import project_for_cwd, remote_request

log = logging.getLogger(__name__)

TITLE_CHARS = 200
NOTE_CHARS = 2000


def handover_entries(event: HookEvent) -> list[dict[str, Any]]:
    handover = event.raw.get("cmem_handover")
    files = handover.get("files") if isinstance(handover, dict) else None
    if not isinstance(files, list):
        return []
    return [f for f in files if isinstance(f, dict) and isinstance(f.get("path"), str)]


def _bytes_of(entry: dict[str, Any], max_bytes: int) -> bytes | None:
    data = entry.get("data")
    if not isinstance(data, str) or len(data) > (max_bytes * 4) // 3 + 8:
        return None
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) <= max_bytes else None


def _dest_dir(session: Session) -> Path:
    day = timezone.localdate().isoformat()
    return deliverables_root() / safe_segment(session.project, "project") / day


def _store(
    *,
    session: Session,
    prompt: Prompt | None,
    entry: dict[str, Any],
    max_bytes: int,
    remote: bool,
    **marks: Any,
) -> Deliverable | None:
    """One handed-over file (or, on a local worker, the file itself when the hook had no
    room for its bytes) recorded as a Deliverable; None when it is refused or unreadable."""
    path = os.path.normpath(entry["path"])
    if not os.path.isabs(path):
        return None
    reason = refusal_reason(path)
    if reason:
        log.info("handed-over deliverable %s refused: %s", path, reason)
        return None
    name = safe_segment(os.path.basename(path), "file")
    data = _bytes_of(entry, max_bytes)
    if data is not None:
        copied = store_stream(io.BytesIO(data), _dest_dir(session), name, max_bytes)
    elif not remote and entry.get("skipped"):
        # The hook had no room for these bytes; this worker shares the disk, so it copies
        # the file itself, under the usual checks.
        found = copy_into(path, _dest_dir(session), name, max_bytes)
        if found is None:
            return None
        copied = found
    else:
        return None
    return deliverable_record(
        session=session, prompt=prompt, path=path, copied=copied, name=name, **marks
    )


def _current_prompt(session: Session) -> Prompt | None:
    return Prompt.objects.filter(session=session, number=session.prompt_counter).first()


def stop_handover_record(*, session: Session, event: HookEvent) -> set[str]:
    """Stop: record the bytes the hook handed over. Returns the paths dealt with (stored,
    or refused by the hook's policy), which the copy from disk then leaves alone."""
    entries = handover_entries(event)
    settings = config.load()
    if not entries or not config.deliverables_enabled(settings):
        return set()
    max_bytes = config.deliverables_max_bytes(settings)
    remote = remote_request()
    cwd = event.cwd or session.cwd
    project_root = session.project_root or (project_for_cwd(cwd).root if cwd else "")
    prompt = _current_prompt(session)
    done: set[str] = set()
    for entry in entries:
        path = os.path.normpath(entry["path"])
        if entry.get("refused"):
            done.add(path)
            continue
        attached = entry.get("attached") is True
        # An attachment may live anywhere the agent chose; a written file counts only
        # outside the project's source tree.
        if not attached and not outside_project(path, project_root=project_root):
            done.add(path)
            continue
        marks = _marks(entry.get("title"), entry.get("note")) if attached else {}
        try:
            if (
                _store(
                    session=session,
                    prompt=prompt,
                    entry=entry,
                    max_bytes=max_bytes,
                    remote=remote,
                    **marks,
                )
                is not None
            ):
                done.add(path)
        except Exception:  # one file never costs the turn the others
            log.exception("handed-over deliverable %s could not be stored", path)
    return done


def _tool_text(value: Any, cap: int) -> str:
    if not isinstance(value, str):
        return ""
    return redaction.Sanitizer().text(value).strip()[:cap]


def _marks(title: Any, note: Any) -> dict[str, Any]:
    return {
        "attached": True,
        "title": _tool_text(title, TITLE_CHARS),
        "note": _tool_text(note, NOTE_CHARS),
    }


def transcript_attachments_record(
    *, session: Session, event: HookEvent, skip: set[str]
) -> list[Deliverable]:
    """Stop, on a worker that shares the agent's disk: the last turn's `work_state_write`
    calls, from the transcript. Their PostToolUse hook is async and may never have run (the
    session ended right after the call); the files are copied from disk under the usual
    checks. Paths in `skip` came with the Stop's own handover."""
    settings = config.load()
    if remote_request() or not config.deliverables_enabled(settings):
        return []
    max_bytes = config.deliverables_max_bytes(settings)
    cwd = event.cwd or session.cwd or "/"
    prompt = _current_prompt(session)
    made: list[Deliverable] = []
    for call in attachments_from_transcript(event.transcript_path or session.transcript_path):
        paths = [
            os.path.normpath(raw if os.path.isabs(raw) else os.path.join(cwd, raw))
            for raw in call["paths"][:50]
        ]
        entries = [
            {"path": path, "skipped": "read from disk"} for path in paths if path not in skip
        ]
        marks = _marks(call["title"], call["note"])
        made += _attachments_store(session, prompt, entries, max_bytes, remote=False, marks=marks)
    return made


def _attachments_store(
    session: Session,
    prompt: Prompt | None,
    entries: list[dict[str, Any]],
    max_bytes: int,
    *,
    remote: bool,
    marks: dict[str, Any],
) -> list[Deliverable]:
    """Each entry stored as an attached deliverable; one that fails is logged, not fatal."""
    made: list[Deliverable] = []
    for entry in entries:
        try:
            found = _store(
                session=session,
                prompt=prompt,
                entry=entry,
                max_bytes=max_bytes,
                remote=remote,
                **marks,
            )
        except Exception:
            log.exception("attachment %s could not be stored", entry.get("path"))
            continue
        if found is not None:
            made.append(found)
    return made


def attachments_wanted(event: HookEvent) -> bool:
    """Whether a tool use is one attachments_record stores anything for: a `work_state_write`
    that did not fail (memory sends it only those, so other tool uses take no savepoint)."""
    return not event.failed and is_cmem_tool(event.tool_name, "work_state_write")


def attachments_record(*, session: Session, event: HookEvent) -> list[Deliverable]:
    """PostToolUse of `work_state_write`: the files it attached, on the current request,
    marked attached, with the call's title and note (tags stripped, secrets redacted)."""
    if not attachments_wanted(event):
        return []
    entries = handover_entries(event)
    settings = config.load()
    if not entries or not config.deliverables_enabled(settings):
        return []
    max_bytes = config.deliverables_max_bytes(settings)
    remote = remote_request()
    marks = _marks(event.tool_input.get("title"), event.tool_input.get("note"))
    prompt = _current_prompt(session)
    wanted = [entry for entry in entries[:50] if not entry.get("refused")]
    return _attachments_store(session, prompt, wanted, max_bytes, remote=remote, marks=marks)
