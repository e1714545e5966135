"""Deliverables as memory sees them: plugged into `memory.extensions` at startup.

memory never imports this app (see memory/extensions.py for the contract). What it needs of
deliverables (the count in /api/stats, a session page's files per prompt, the rows an
export carries and an import restores, the copy at Stop) it reaches through the
`SessionPart` and the `turn_finished` receiver that `DeliverablesConfig.ready()` registers.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from deliverables.handover import (
    attachments_record,
    attachments_wanted,
    stop_handover_record,
    transcript_attachments_record,
)
from deliverables.models import Deliverable
from deliverables.services import deliverables_capture
from memory.agents.base import HookEvent
from memory.extensions import SessionPart
from memory.global_ids import is_gid
from memory.importers.json_io import time_export, time_import
from memory.models import Prompt, Session
from memory.team import scope

_EXPORT_FIELDS = (
    "original_path",
    "stored_path",
    "size",
    "sha256",
    "content_type",
    "attached",
    "title",
    "note",
)


def deliverables_count(project: str | None) -> int:
    deliverables = scope.owned(Deliverable.objects.all())
    if project:
        deliverables = deliverables.filter(project=project)
    return deliverables.count()


def deliverables_by_prompt(session: Session) -> dict[int, list[Any]]:
    """The session page's files per prompt pk, oldest first."""
    by: dict[int, list[Any]] = defaultdict(list)
    for d in Deliverable.objects.filter(session=session).order_by("created"):
        if d.prompt_id is not None:
            by[d.prompt_id].append(d)
    return dict(by)


def deliverables_export(sessions: list[Session]) -> dict[int, list[dict[str, Any]]]:
    """Each session's deliverable metadata (not the bytes), oldest first."""
    by: dict[int, list[dict[str, Any]]] = defaultdict(list)
    rows = (
        Deliverable.objects.filter(session__in=sessions)
        .select_related("prompt")
        .order_by("created", "pk")
    )
    for d in rows:
        by[d.session_id].append(
            {
                **{f: getattr(d, f) for f in _EXPORT_FIELDS},
                "gid": d.gid,
                "prompt_number": d.prompt.number if d.prompt else None,
                "created": time_export(d.created),
            }
        )
    return dict(by)


def deliverables_import(
    session: Session, rows: list[dict[str, Any]], prompts: dict[int, Prompt]
) -> Iterator[bool]:
    """Idempotent by global id and by (session, original path, sha256); yields whether
    each row was new. A row keeps the global id it was exported with (one it lacks, or
    that is malformed, gets a fresh one)."""
    for data in rows:
        gid = data.get("gid")
        if (is_gid(gid) and Deliverable.objects.filter(gid=gid).exists()) or (
            Deliverable.objects.filter(
                session=session, original_path=data["original_path"], sha256=data["sha256"]
            ).exists()
        ):
            yield False
            continue
        fields = {f: data[f] for f in _EXPORT_FIELDS if f in data and data[f] is not None}
        if is_gid(gid):
            fields["gid"] = gid
        number = data.get("prompt_number")
        Deliverable.objects.create(
            session=session,
            project=session.project,
            prompt=prompts.get(number) if number else None,
            created=time_import(data.get("created")),
            **fields,
        )
        yield True


def on_turn_finished(*, session: Session, event: HookEvent) -> None:
    """Stop: record the bytes the hook handed over (worker down, or remote), then copy the
    rest of the turn's deliverables from disk (memory runs this in a savepoint of its own)."""
    done = stop_handover_record(session=session, event=event)
    deliverables_capture(session=session, event=event, skip=done)
    transcript_attachments_record(session=session, event=event, skip=done)


def on_tool_recorded(*, session: Session, event: HookEvent) -> None:
    """PostToolUse: a `work_state_write` call's attached files, on the current request."""
    attachments_record(session=session, event=event)


# The tool uses on_tool_recorded is sent (memory.extensions filters before its savepoint).
tool_recorded_wanted = attachments_wanted


SESSION_PART = SessionPart(
    name="deliverables",
    noun="deliverable",
    count=deliverables_count,
    by_prompt=deliverables_by_prompt,
    turn_template="deliverables/_session_turn.html",
    export=deliverables_export,
    import_rows=deliverables_import,
)
