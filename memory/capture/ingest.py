"""Capture services: session init, tool-use recording, summary requests, session end.

Each runs in ONE transaction and answers at once: the slow work (compression) happens in a
huey task enqueued on commit, which only ever receives the session's id. Nothing is
stored for excluded projects, and everything passes through `memory.privacy` first.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone
from huey.contrib.djhuey import HUEY

from memory import config
from memory.agents.base import HookEvent, HookResult
from memory.agents.tool_names import is_cmem_tool
from memory.briefing import failure_recall, prompt_recall
from memory.briefing.file_views import absolute_path, file_facts, file_view_record_from_tool
from memory.capture.transcript_model import model_name_clean, transcript_model
from memory.compression.tasks import session_events_process_task
from memory.extensions import session_ended_send, tool_recorded_send, turn_finished_send
from memory.ledger import (
    ledger_insert,
    ledger_record_memory_tool,
    memory_tool_bare,
)
from memory.models import Event, LedgerEntry, Prompt, Session
from memory.privacy import redaction
from memory.privacy.secret_locations import refusal_reason
from memory.projects import (
    Project,
    is_excluded,
    is_excluded_path,
    project_for_cwd,
    relative_path,
    remote_request,
)
from memory.runtime.compiled_sql import CompiledFetch, CompiledInsert
from memory.team import scope

log = logging.getLogger(__name__)

FILE_TOOLS = {
    "Read": "read",
    "Edit": "modified",
    "MultiEdit": "modified",
    "Write": "modified",
    "NotebookEdit": "modified",
}
# Files larger than this are stat'ed but not hashed on the hook's path.
# A spooled prompt equal to the session's last one within this window is the same prompt
# delivered twice (the hook timed out after the worker stored it), not a repeated prompt.
SPOOL_DUPLICATE_WINDOW = timedelta(minutes=10)
_PRIVATE_TURNS_KEPT = 500
# Seconds between a tool use's commit and its compression (see _enqueue_processing).
COMPRESS_DELAY_S = 2


def _project(event: HookEvent, settings: dict[str, str] | None = None) -> Project | None:
    """The event's project, or None when it is excluded (then nothing is stored).
    `settings`: the request's config.load(), when the caller has it (one load a request)."""
    project = project_for_cwd(event.cwd, settings)
    if is_excluded(event.cwd, project, settings):
        return None
    return project


# The ORM's SELECT of one session by (platform, session_id): building that query cost
# ~0.17 ms per tool use, over four times what SQLite takes to run it, and raw()'s per-call
# model setup another 14% of a tool use (see memory/runtime/compiled_sql.py).
_SESSION_LOOKUP = CompiledFetch(
    Session,
    lambda p: Session.objects.filter(platform=p["platform"], session_id=p["session_id"]),
    "platform",
    "session_id",
)


def _session_get(*, platform: str, session_id: str) -> Session | None:
    session: Session | None = _SESSION_LOOKUP.first(platform=platform, session_id=session_id)
    return session


def _session_upsert(*, event: HookEvent, project: Project) -> Session:
    session = _session_get(platform=event.platform, session_id=event.session_id)
    if session is None:
        defaults = {
            "project": project.name,
            "project_root": project.root,
            "cwd": event.cwd,
            "transcript_path": event.transcript_path,
            "owner_id": scope.writer_id(),
        }
        session, created = Session.objects.get_or_create(
            platform=event.platform, session_id=event.session_id, defaults=defaults
        )
        if created:
            return session
    # A session id of another user's session (guessed or copied) stores nothing.
    scope.session_check(session.owner_id)
    changed = []
    for name in ("cwd", "transcript_path"):
        value = getattr(event, name)
        if value and getattr(session, name) != value:
            setattr(session, name, value)
            changed.append(name)
    if not session.project_root and project.root:
        session.project_root = project.root
        changed.append("project_root")
    if changed:
        session.save(update_fields=changed)
    return session


# --- private turns ------------------------------------------------------------------------
# A fully private prompt stores nothing, not even its session. The tool uses and the Stop of
# that turn carry the same prompt_id, so a one-way hash of it is remembered (in a small state
# file, never the text) and they are dropped too (claude-mem stores them: §13.2).


def _turn_key(event: HookEvent) -> str:
    """The turn's key: its prompt_id when the agent sends one; otherwise the session itself,
    so a private prompt without a prompt_id still hides its turn until the next prompt."""
    prompt_id = str(event.raw.get("prompt_id") or "")
    return hashlib.sha256(f"{event.session_id}\0{prompt_id or '*'}".encode()).hexdigest()[:32]


def _session_key(event: HookEvent) -> str:
    return hashlib.sha256(f"{event.session_id}\0*".encode()).hexdigest()[:32]


def _private_turns_path() -> Path:
    return config.data_dir() / "state" / "private-turns"


def _private_turn_keys() -> list[str]:
    try:
        return _private_turns_path().read_text().split()
    except FileNotFoundError:
        return []


def _private_turn_remember(event: HookEvent) -> None:
    if not event.session_id:
        return
    keys = [k for k in _private_turn_keys() if k != _session_key(event)]
    # The session key marks "the current turn of this session is private" whatever ids the
    # turn's later events carry; a public prompt of the session clears it.
    keys = [*keys[-(_PRIVATE_TURNS_KEPT - 2) :], _turn_key(event), _session_key(event)]
    config.write_atomic(_private_turns_path(), ("\n".join(dict.fromkeys(keys)) + "\n").encode())


def _private_turn_forget_session(event: HookEvent) -> None:
    keys = _private_turn_keys()
    if _session_key(event) in keys:
        kept = [k for k in keys if k != _session_key(event)]
        config.write_atomic(_private_turns_path(), ("\n".join(kept) + "\n").encode())


def _in_private_turn(event: HookEvent) -> bool:
    if not event.session_id:
        return False
    keys = _private_turn_keys()
    return _turn_key(event) in keys or _session_key(event) in keys


# --- services -----------------------------------------------------------------------------


def session_init(*, event: HookEvent) -> HookResult:
    """UserPromptSubmit.

    0. A tool-result turn the agent reports as a prompt (Qwen Code): store nothing.
    1. Excluded project or an internal `<task-notification>` prompt: store nothing.
    2. Strip private tags; a prompt that was entirely private stores nothing at all.
    3. In one transaction: create/update the session, store the prompt with the next number.
    """
    if event.tool_turn:
        return HookResult()
    project = _project(event)
    if project is None or redaction.is_internal_notification(event.prompt):
        return HookResult()
    sanitizer = redaction.Sanitizer()
    text = sanitizer.text(event.prompt).strip()
    if not text and event.prompt.strip():
        _private_turn_remember(event)
        return HookResult()
    _private_turn_forget_session(event)
    text = text or "[media prompt]"
    with transaction.atomic():
        session = _session_upsert(event=event, project=project)
        if not session.is_open:
            session.status = Session.Status.ACTIVE
            session.ended = None
            session.save(update_fields=["status", "ended"])
        if event.raw.get("cmem_spooled"):
            last = session.prompts.order_by("-number").first()
            if (
                last
                and last.text == text
                and timezone.now() - last.created < SPOOL_DUPLICATE_WINDOW
            ):
                return HookResult()
        # Counted in SQL so two concurrent prompts of one session never get the same number.
        Session.objects.filter(pk=session.pk).update(prompt_counter=F("prompt_counter") + 1)
        session.refresh_from_db(fields=["prompt_counter"])
        Prompt.objects.create(session=session, number=session.prompt_counter, text=text)
    if event.raw.get("cmem_spooled"):
        return HookResult()  # replayed later: the agent is no longer waiting for context
    notes = prompt_recall.related_notes(session=session, text=text)
    if notes:
        ledger_insert(
            kind=LedgerEntry.Kind.INJECTION,
            session=session,
            project=project.name,
            shown=notes,
            detail="prompt_recall",
        )
    return HookResult(context=notes)


def _file_facts(path: str) -> dict[str, Any]:
    """Size, mtime and sha256 of a file on this machine; {} when it is not a regular file."""
    facts = file_facts(path, with_hash=True)
    if facts is None:
        return {}
    out: dict[str, Any] = {"size": facts.size, "mtime": facts.mtime}
    if facts.sha256:
        out["sha256"] = facts.sha256
    return out


def _tool_paths(event: HookEvent) -> list[str]:
    paths = []
    for key in ("file_path", "notebook_path"):
        value = event.tool_input.get(key)
        if isinstance(value, str) and value:
            paths.append(value if os.path.isabs(value) else os.path.join(event.cwd or "/", value))
    return paths


def files_facts(*, event: HookEvent, project: Project) -> list[dict[str, Any]]:
    """`cmem_files` of a file tool's event: which file, read or modified, and its state on disk
    (or as the remote hook client reported it, in team mode)."""
    role = FILE_TOOLS.get(event.tool_name)
    pairs = [(path, role) for path in _tool_paths(event)] if role else []
    # Adapters name the files of tools without a `file_path` (Codex apply_patch, shell reads).
    pairs += [(os.path.join(event.cwd or "/", p), r) for p, r in event.tool_files]
    out = []
    remote = bool(pairs) and remote_request()
    for path, file_role in pairs:
        norm = os.path.normpath(path)
        reported = event.file_facts.get(path) or event.file_facts.get(norm)
        if isinstance(reported, dict):
            facts = dict(reported)
        elif remote:
            facts = {}  # team mode: the server never reads a path a client named
        else:
            facts = _file_facts(norm)
        # A key pasted into a path (`/tmp/sk-ant-…/out.txt`) is a secret like any other.
        out.append(
            {
                "path": redaction.redact_text(relative_path(norm, project.root)),
                "abs": redaction.redact_text(norm),
                "role": file_role,
                "size": facts.get("size"),
                "mtime": facts.get("mtime"),
                "sha256": facts.get("sha256", ""),
            }
        )
    return out


# cmem's own curation tools store what they change themselves, labelled; observing the call
# as well would make an unlabelled observer copy of agent-written text that stays current
# after the memory is superseded.
CURATION_TOOLS = ("remember", "memory_correct", "forget")


def _skipped_tool(event: HookEvent, settings: dict[str, str]) -> bool:
    if not event.tool_name or event.tool_name in config.skip_tools(settings):
        return True
    if any(is_cmem_tool(event.tool_name, tool) for tool in CURATION_TOOLS):
        return True
    # claude-mem's rule: its own session-memory files are meta, never observed.
    return any("session-memory" in p for p in _tool_paths(event))


def tool_use_payload(*, event: HookEvent, sanitizer: redaction.Sanitizer) -> dict[str, Any]:
    """The sanitized tool use as an Event payload stores it (live capture and imports alike)."""
    # Text read from a secret location (memory.privacy.secret_locations) is refused whole:
    # a credentials file is secrets in formats no pattern knows.
    refused = next((r for r in map(refusal_reason, _tool_paths(event)) if r), "")
    response = f"[REDACTED:{redaction._slug(refused)}]" if refused else event.tool_response
    payload: dict[str, Any] = {
        "hook_event_name": event.hook_event_name,
        "tool_name": event.tool_name,
        "tool_input": sanitizer.field(event.tool_input),
        "tool_response": sanitizer.field(response),
        "cwd": event.cwd,
        "prompt_id": str(event.raw.get("prompt_id") or ""),
        "duration_ms": event.raw.get("duration_ms"),
    }
    if event.failed:
        payload["error"] = sanitizer.text(event.error)
        payload["is_interrupt"] = event.is_interrupt
    return payload


def observation_record(*, event: HookEvent) -> HookResult:
    """PostToolUse / PostToolUseFailure.

    1. Skip excluded projects, CLAUDE_MEM_SKIP_TOOLS and tool uses of a private turn.
    2. Sanitize input, output and error (tags, secrets, caps); note the files it touched.
    3. In one transaction: the session, an Event(kind=observation) idempotent by tool_use_id,
       the file view; compression is enqueued on commit. Answers at once.
    """
    settings = config.load()
    if _skipped_tool(event, settings):
        return HookResult()
    project = _project(event, settings)
    if project is None or _in_private_turn(event):
        return HookResult()
    sanitizer = redaction.Sanitizer(settings=settings)
    payload = tool_use_payload(event=event, sanitizer=sanitizer)
    if event.agent_id:
        payload["agent_id"] = event.agent_id
        payload["agent_type"] = event.agent_type
    payload["cmem_files"] = files_facts(event=event, project=project)
    if any(is_excluded_path(f["abs"], settings) for f in payload["cmem_files"]):
        return HookResult()  # a file of an excluded project, read from another one
    with transaction.atomic():
        session = _session_upsert(event=event, project=project)
        # Idempotent by the unique (session, tool_use_id) constraint, not a SELECT first: a
        # duplicate delivery (retry, spool replay, concurrent PostgreSQL writer) is skipped
        # by the INSERT itself (ON CONFLICT DO NOTHING; a savepoint took two statements more).
        # The row by one compiled INSERT (memory/runtime/compiled_sql.py): the ORM's create() was a quarter
        # of a tool use's CPU; nothing listens to Event's save signals.
        stored = _EVENT_INSERT.insert_new(
            session_id=session.pk,
            kind=Event.Kind.OBSERVATION,
            tool_name=event.tool_name[:200],
            tool_use_id=event.tool_use_id[:200],
            prompt_number=session.prompt_counter or None,
            payload=payload,
        )
        if stored is None:
            return HookResult()
        if event.tool_name in FILE_TOOLS and not event.failed:
            # The file was just hashed for cmem_files: hand those facts over, not the disk again.
            file_view_record_from_tool(session=session, event=event, known=payload["cmem_files"])
        _memory_tool_record(event=event, session=session, project=project)
        # Apps built on memory (deliverables records a work_state_write call's files) hook in.
        tool_recorded_send(session=session, event=event)
        _enqueue_processing(session.pk)
    log.debug("recorded event %s", stored)
    # After the commit: the tool use is stored whatever the recall does. Only where the agent
    # reads the answer (a synchronous failure hook); a successful tool use pays one test.
    if event.context_read:
        return HookResult(
            context=failure_recall.failure_recall(event=event, session=session, settings=settings)
        )
    return HookResult()


_EVENT_INSERT = CompiledInsert(Event)


def _memory_tool_record(*, event: HookEvent, session: Session, project: Project) -> None:
    """A cmem memory tool answered in this session: its answer is context cmem added, and
    it may be what a refusal led to (the adaptive gate learns from that)."""
    tool = memory_tool_bare(event.tool_name)
    if not tool or event.failed or event.agent_id:
        return
    raw_path = event.tool_input.get("file_path")
    path = absolute_path(raw_path, event.cwd) if isinstance(raw_path, str) and raw_path else ""
    text = _response_text(event.tool_response)
    ledger_record_memory_tool(
        session=session, project=project.name, tool=tool, path=path, shown=text
    )


def _response_text(response: Any) -> str:
    """An MCP tool's answer as the model saw it: its text blocks, else the JSON."""
    if isinstance(response, str):
        return response
    blocks = response if isinstance(response, list) else [response]
    texts = [b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return "\n".join(texts) if texts else json.dumps(response, default=str)


# session pk -> when (time.monotonic) the compression task this process scheduled for it
# runs; see _enqueue_processing.
_scheduled: dict[int, float] = {}
_scheduled_lock = threading.Lock()
# A task due sooner than this may already be running (the scheduler runs it at its time or
# a little after, never before), so it might not see the event just committed.
_STILL_PENDING_S = COMPRESS_DELAY_S / 4


def _enqueue_processing(session_pk: int) -> None:
    """Compression runs a moment after the commit, not at once: a burst of tool uses is
    then compressed as one batch, and the consumer's writes do not queue behind (and in
    front of) the hooks' own writes for SQLite's single write lock during the burst.

    One task per burst, not one per tool use: the task compresses every pending event of
    its session when it runs, so while the one scheduled earlier is still at least
    _STILL_PENDING_S away, it will find this event too (committed before this callback
    runs) and no second task is queued. That saved the queue write on each tool use
    (~0.1 ms) and the consumer an empty run per tool use. The event is stored
    either way; should a task be lost, the minute's events_sweep_task enqueues it again.
    Immediate mode (the tests' huey: parked tasks run when a test says, and are flushed
    between tests) schedules every time, as this process cannot know what still waits."""

    def schedule() -> None:
        if HUEY.immediate:
            session_events_process_task.schedule((session_pk,), delay=COMPRESS_DELAY_S)
            return
        now = time.monotonic()
        with _scheduled_lock:
            due = _scheduled.get(session_pk)
            if due is not None and due - now >= _STILL_PENDING_S:
                return
            if len(_scheduled) > 1000:
                for pk in [pk for pk, at in _scheduled.items() if at < now]:
                    del _scheduled[pk]
            _scheduled[session_pk] = now + COMPRESS_DELAY_S
        try:
            session_events_process_task.schedule((session_pk,), delay=COMPRESS_DELAY_S)
        except BaseException:
            with _scheduled_lock:  # not queued after all: the next tool use queues it
                _scheduled.pop(session_pk, None)
            raise

    transaction.on_commit(schedule)


def summary_request(*, event: HookEvent) -> HookResult:
    """Stop: queue a summary of the turn (not on a Stop hook's own re-entry, not for
    subagents or private turns) and tell `memory.extensions` the turn finished (deliverables
    copies the turn's files) before answering."""
    project = _project(event)
    if project is None or event.stop_hook_active or event.agent_id or _in_private_turn(event):
        return HookResult()
    sanitizer = redaction.Sanitizer()
    prompt_id = str(event.raw.get("prompt_id") or "")
    payload = {
        "hook_event_name": event.hook_event_name,
        "last_assistant_message": sanitizer.text(event.last_assistant_message),
        "prompt_id": prompt_id,
        "transcript_path": event.transcript_path,
        "cwd": event.cwd,
    }
    # One summary per turn: a Stop delivered twice (spool replay) finds its key taken.
    key = f"stop:{prompt_id}" if prompt_id else ""
    with transaction.atomic():
        session = _session_upsert(event=event, project=project)
        if key and Event.objects.filter(session=session, tool_use_id=key).exists():
            return HookResult()
        Event.objects.create(
            session=session,
            kind=Event.Kind.SUMMARY,
            tool_use_id=key[:200],
            prompt_number=session.prompt_counter or None,
            payload=payload,
        )
        _session_model_note(session=session, event=event)
        # Apps built on memory (deliverables copies the turn's files) hook in here.
        turn_finished_send(session=session, event=event)
        _enqueue_processing(session.pk)
    return HookResult()


def session_end(*, event: HookEvent) -> HookResult:
    """SessionEnd: the session is complete; events already queued still get compressed."""
    if _project(event) is None:
        return HookResult()
    with transaction.atomic():
        Session.objects.filter(
            platform=event.platform,
            session_id=event.session_id,
            status=Session.Status.ACTIVE,
            owner_id=scope.writer_id(),
        ).update(status=Session.Status.COMPLETED, ended=timezone.now())
        session = _session_get(platform=event.platform, session_id=event.session_id)
        if session is not None:
            _session_model_note(session=session, event=event)
            # After the commit and off the hook's path: a receiver only enqueues (sync).
            pk = session.pk
            transaction.on_commit(lambda: session_ended_send(session_pk=pk))
    return HookResult()


def _session_model_note(*, session: Session, event: HookEvent) -> None:
    """Remember the session's main model from its transcript (at each Stop: `/model` can
    change it), so Stats prices its tokens at that model. A remote client's path is never
    opened: its hook client reads its own transcript and sends the model (`cmem_model`)."""
    if remote_request():
        model = model_name_clean(event.raw.get("cmem_model"))
    else:
        path = event.transcript_path or session.transcript_path
        model = transcript_model(path) if path else ""
    if model and model != session.model:
        Session.objects.filter(pk=session.pk).update(model=model)
        session.model = model
