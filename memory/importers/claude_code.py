"""Backfill from Claude Code transcripts (`~/.claude/projects/<folder>/<session>.jsonl`).

A transcript holds everything the hooks would have seen: the user prompts, each `tool_use`
the model sent and the `tool_result` (with the structured `toolUseResult`) that came back.
The importer rebuilds the UserPromptSubmit and PostToolUse(Failure) payloads from them, runs
them through the Claude Code adapter and the same privacy rules as the live hooks, and
stores Session, Prompt and Event rows that the compression task then turns into
observations, exactly like live capture. Timestamps are the transcript's, not now.

Idempotent: an Event is unique per (session, tool_use_id) and a Prompt per (session,
number), so a second import, or an import of a session captured live, adds nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from memory import config
from memory.agents import claude_code
from memory.agents.base import HookInputError
from memory.compression.tasks import session_events_process_task
from memory.importers.bulk import insert_rows
from memory.importers.report import ImportReport
from memory.importers.sanitize import observation_payload
from memory.importers.session_store import (
    ImportFilter,
    import_arguments,
    import_options,
    imported_prompts_store,
    imported_session_get_or_create,
    session_filtered_out,
    stored_tool_use_ids,
    timestamp_parse,
)
from memory.models import Event, Session
from memory.privacy import redaction
from memory.projects import Project, project_for_cwd

# Prompts Claude Code writes itself (slash-command echoes, local command output): not the user's.
_GENERATED_PROMPT_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<local-command-",
    "Caveat: The messages below",
)


@dataclass
class ToolUse:
    tool_use_id: str
    name: str
    tool_input: dict[str, Any]
    prompt_number: int
    at: datetime | None
    response: Any = None
    error: str = ""
    answered: bool = False


@dataclass
class TranscriptSession:
    session_id: str
    transcript_path: str
    cwd: str = ""
    prompts: list[tuple[str, datetime | None]] = field(default_factory=list)
    tool_uses: dict[str, ToolUse] = field(default_factory=dict)
    first: datetime | None = None
    last: datetime | None = None

    def seen(self, at: datetime | None) -> None:
        if at is None:
            return
        self.first = at if self.first is None or at < self.first else self.first
        self.last = at if self.last is None or at > self.last else self.last


def default_root() -> Path:
    return Path(os.environ.get("HOME") or Path.home()) / ".claude" / "projects"


def transcript_files(path: Path | None = None) -> list[Path]:
    """PATH as a file, every `*.jsonl` under PATH, or the default `~/.claude/projects/*/*.jsonl`."""
    root = path or default_root()
    if root.is_file():
        return [root]
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*.jsonl") if p.is_file())


def transcript_lines(path: Path, report: ImportReport) -> Iterator[dict[str, Any]]:
    """Each JSON object line; a truncated last line (a session still being written) or a
    foreign line is counted and skipped, never fatal."""
    with path.open("rb") as fh:
        for number, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw.decode("utf-8", errors="replace"))
            except ValueError:
                report.problem(f"{path.name}:{number}: not JSON (truncated?)")
                continue
            if isinstance(data, dict):
                yield data
            else:
                report.problem(f"{path.name}:{number}: not a JSON object")


def _prompt_text(message: dict[str, Any]) -> str | None:
    """The typed prompt of a user entry, or None when the entry is a tool result or generated."""
    content = message.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return None
        text = "\n".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    else:
        return None
    text = text.strip()
    if not text or text.startswith(_GENERATED_PROMPT_PREFIXES):
        return None
    return text


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def transcript_parse(
    lines: Iterable[dict[str, Any]], *, transcript_path: str = ""
) -> dict[str, TranscriptSession]:
    """Group a transcript's entries into sessions with their prompts and answered tool uses."""
    sessions: dict[str, TranscriptSession] = {}
    for entry in lines:
        kind = entry.get("type")
        sid = entry.get("sessionId")
        if kind not in {"user", "assistant"} or not isinstance(sid, str) or not sid:
            continue  # queue-operation, attachment, api-request, cost-state… carry nothing to keep
        message = entry.get("message")
        if not isinstance(message, dict):
            continue
        session = sessions.setdefault(
            sid, TranscriptSession(session_id=sid, transcript_path=transcript_path)
        )
        at = timestamp_parse(entry.get("timestamp"))
        session.seen(at)
        if not session.cwd and isinstance(entry.get("cwd"), str):
            session.cwd = entry["cwd"]
        if entry.get("isSidechain"):
            continue  # a subagent's turns: its tool uses reach us through its own transcript
        if kind == "assistant":
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("id"):
                    raw_input = block.get("input")
                    tool_input: dict[str, Any] = raw_input if isinstance(raw_input, dict) else {}
                    session.tool_uses.setdefault(
                        block["id"],
                        ToolUse(
                            block["id"],
                            str(block.get("name", "")),
                            tool_input,
                            len(session.prompts),
                            at,
                        ),
                    )
            continue
        if entry.get("isMeta") or entry.get("isCompactSummary"):
            continue
        text = _prompt_text(message)
        if text is not None:
            session.prompts.append((text, at))
            continue
        for block in message.get("content") or []:
            if not (isinstance(block, dict) and block.get("type") == "tool_result"):
                continue
            use = session.tool_uses.get(str(block.get("tool_use_id", "")))
            if use is None:
                continue
            use.answered = True
            if block.get("is_error"):
                use.error = _result_text(block.get("content"))
            else:
                structured = entry.get("toolUseResult")
                use.response = (
                    structured if structured is not None else _result_text(block.get("content"))
                )
    return sessions


def _hook_payload(session: TranscriptSession, use: ToolUse) -> dict[str, Any]:
    """The PostToolUse (or PostToolUseFailure) stdin Claude Code would have sent."""
    payload: dict[str, Any] = {
        "session_id": session.session_id,
        "transcript_path": session.transcript_path,
        "cwd": session.cwd,
        "hook_event_name": "PostToolUseFailure" if use.error else "PostToolUse",
        "tool_name": use.name,
        "tool_input": use.tool_input,
        "tool_use_id": use.tool_use_id,
    }
    if use.error:
        payload["error"] = use.error
    else:
        payload["tool_response"] = use.response
    return payload


def transcript_session_import(
    *, parsed: TranscriptSession, report: ImportReport, only: ImportFilter
) -> Session | None:
    """Store one transcript session.

    1. Skip it when its project is filtered out or excluded, or it ended before `since`.
    2. Get or create the Session (backdated to the transcript's first entry).
    3. Add each prompt not stored yet (numbered in transcript order), privacy applied.
    4. Add each answered tool use not stored yet as a pending observation Event.
    5. On commit, queue the session for compression.
    """
    project = project_for_cwd(parsed.cwd)
    if session_filtered_out(cwd=parsed.cwd, project=project, last=parsed.last, only=only):
        report.add("session", created=False)
        return None
    skip_tools = set(config.get_list("CLAUDE_MEM_SKIP_TOOLS"))
    with transaction.atomic():
        session, created = imported_session_get_or_create(
            platform=claude_code.platform,
            session_id=parsed.session_id,
            project=project,
            cwd=parsed.cwd,
            transcript_path=parsed.transcript_path,
            first=parsed.first,
            last=parsed.last,
        )
        report.add("session", created)
        sanitizer = redaction.Sanitizer()
        private = imported_prompts_store(
            session=session,
            prompts=parsed.prompts,
            sanitizer=sanitizer,
            report=report,
            since=only.since,
        )
        stored = stored_tool_use_ids(session)
        events: list[Event] = []
        for use in parsed.tool_uses.values():
            if use.prompt_number in private or use.tool_use_id in stored:
                report.add("tool use", created=False)
                continue
            event = _tool_use_event(
                session=session,
                project=project,
                parsed=parsed,
                use=use,
                report=report,
                only=only,
                skip_tools=skip_tools,
                sanitizer=sanitizer,
            )
            if event is not None:
                stored.add(use.tool_use_id)
                events.append(event)
        # One insert for the session's tool uses (Event rows fire no triggers).
        insert_rows(Event, events)
        queued = bool(events)
        if queued:
            transaction.on_commit(lambda: session_events_process_task(session.pk))
    return session


def _tool_use_event(
    *,
    session: Session,
    parsed: TranscriptSession,
    project: Project,
    use: ToolUse,
    report: ImportReport,
    only: ImportFilter,
    skip_tools: set[str],
    sanitizer: redaction.Sanitizer,
) -> Event | None:
    """The Event to store for one answered tool use not stored yet; None when it is left out."""
    too_old = bool(only.since and use.at and use.at < only.since)
    if not use.answered or use.name in skip_tools or too_old:
        report.add("tool use", created=False)
        return None
    raw = _hook_payload(parsed, use)
    try:
        event = claude_code.parse("observation", raw)  # the live path's validation
    except HookInputError as exc:
        report.problem(f"{parsed.session_id[:8]} {use.tool_use_id}: {exc}")
        return None
    payload = observation_payload(event=event, project=project, sanitizer=sanitizer)
    stored = Event(
        session=session,
        kind=Event.Kind.OBSERVATION,
        tool_name=use.name,
        tool_use_id=use.tool_use_id,
        prompt_number=use.prompt_number or None,
        payload=payload,
        created=use.at or timezone.now(),
    )
    report.add("tool use", created=True)
    return stored


def transcripts_import(
    *, files: list[Path], only: ImportFilter, report: ImportReport, progress: Any = None
) -> ImportReport:
    """Import each transcript file; `progress` (a rich Progress task callback) advances per file."""
    # The settings as at the start: the privacy pass reads them for every tool use, and
    # re-reading the settings file each time was a tenth of an import's time.
    with config.settings_snapshot():
        for path in files:
            try:
                sessions = transcript_parse(
                    transcript_lines(path, report), transcript_path=str(path)
                )
            except OSError as exc:
                report.problem(f"{path}: {exc.strerror or exc}")
                sessions = {}
            for parsed in sessions.values():
                transcript_session_import(parsed=parsed, report=report, only=only)
            if progress is not None:
                progress()
    return report


HELP = "Claude Code transcripts (~/.claude/projects/*/*.jsonl, or PATH: a file or a folder)."


def add_arguments(parser: Any) -> None:
    import_arguments(parser, path_help="A transcript file or a folder of them.")


def import_from(*, options: dict[str, Any], report: ImportReport, progress: Any) -> ImportReport:
    path, only = import_options(options)
    files = transcript_files(path)
    if not files:
        # Nothing to import is an answer only with where it was looked for.
        where = path or default_root()
        report.notes.append(
            f"no Claude Code transcripts (*.jsonl) in {where}"
            + ("" if path else "; give a file or folder: `cmem import claude-code PATH`")
        )
    tick = progress(len(files), "transcripts")
    return transcripts_import(
        files=files,
        only=only,
        report=report,
        progress=tick,
    )
