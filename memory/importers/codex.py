"""Backfill from Codex rollouts (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl`).

A rollout holds one thread: its first line is `session_meta` (thread id, root `session_id`,
cwd; `parent_thread_id` for a sub-agent, `forked_from_id` for a fork), then the thread's
items. The importer rebuilds what the live hooks would have sent: the user's prompts
(`event_msg` user messages, never the harness's own context messages) and each answered
tool call (`function_call` / `custom_tool_call` with its `*_output`), with the shell tool
named `Bash` and its `cmd` as `command`, as Codex's hooks name them. Each goes through the
Codex adapter and the same privacy rules, so the compressor cannot tell it from live capture.

- Sub-agent rollouts add their tool uses to the root session (live hooks do the same:
  `session_id` is the root's), never their prompts (the parent model's task, not the user's).
- A fork's rollout starts with a copy of its parent's lines (ordinals before
  `forked_from_ordinal_exclusive`): skipped, the parent's own rollout holds them.
- Idempotent like the Claude Code importer: Events are unique per (session, tool_use_id),
  Prompts per (session, number).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from memory import config
from memory.agents import codex
from memory.agents.base import HookInputError
from memory.compression.tasks import session_events_process_task
from memory.importers.bulk import insert_rows
from memory.importers.claude_code import transcript_lines
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
from memory.projects import project_for_cwd

SHELL_TOOLS = {"exec_command", "shell", "local_shell"}


@dataclass
class CodexCall:
    call_id: str
    name: str
    tool_input: dict[str, Any]
    at: datetime | None
    prompt_number: int
    output: Any = None
    answered: bool = False


@dataclass
class Rollout:
    path: str
    session_id: str = ""
    thread_id: str = ""
    cwd: str = ""
    subagent: bool = False
    prompts: list[tuple[str, datetime | None]] = field(default_factory=list)
    calls: dict[str, CodexCall] = field(default_factory=dict)
    first: datetime | None = None
    last: datetime | None = None


def default_root() -> Path:
    base = os.environ.get("CODEX_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".codex") / "sessions"


def rollout_files(path: Path | None = None) -> list[Path]:
    root = path or default_root()
    if root.is_file():
        return [root]
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("rollout-*.jsonl") if p.is_file())


def _tool_input(name: str, raw: Any) -> tuple[str, dict[str, Any]]:
    """Hook-style (tool_name, tool_input) of a model's tool call."""
    if name == "apply_patch":
        return name, {"command": raw if isinstance(raw, str) else json.dumps(raw)}
    try:
        args = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        args = {"input": raw}
    if not isinstance(args, dict):
        args = {"input": args}
    if name in SHELL_TOOLS:
        command = args.get("cmd") or args.get("command") or ""
        if isinstance(command, list):
            command = " ".join(str(c) for c in command)
        return "Bash", {"command": str(command)}
    return name, args


def _user_text(payload: dict[str, Any]) -> str:
    """The user's prompt of an event_msg (`item_completed` of a UserMessage in 0.171,
    `user_message` before), "" for anything else."""
    if payload.get("type") == "user_message":
        return str(payload.get("message") or "").strip()
    item = payload.get("item")
    if payload.get("type") != "item_completed" or not isinstance(item, dict):
        return ""
    if item.get("type") != "UserMessage":
        return ""
    content = item.get("content")
    parts: list[Any] = content if isinstance(content, list) else []
    return "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict)).strip()


def rollout_parse(lines: Any, *, path: str) -> Rollout:
    rollout = Rollout(path=path)
    skip_before = -1
    for entry in lines:
        kind = entry.get("type")
        payload = entry.get("payload")
        if not isinstance(payload, dict):
            continue
        if kind == "session_meta" and not rollout.thread_id:
            rollout.thread_id = str(payload.get("id") or "")
            rollout.session_id = str(payload.get("session_id") or rollout.thread_id)
            rollout.cwd = str(payload.get("cwd") or "")
            rollout.subagent = bool(payload.get("parent_thread_id"))
            if payload.get("forked_from_id"):
                skip_before = int(payload.get("forked_from_ordinal_exclusive") or 0)
            continue
        ordinal = entry.get("ordinal")
        if isinstance(ordinal, int) and ordinal < skip_before:
            continue
        at = timestamp_parse(entry.get("timestamp"))
        if at is not None:
            rollout.first = at if rollout.first is None or at < rollout.first else rollout.first
            rollout.last = at if rollout.last is None or at > rollout.last else rollout.last
        item_type = payload.get("type")
        if kind == "event_msg" and not rollout.subagent and _user_text(payload):
            rollout.prompts.append((_user_text(payload), at))
        elif kind == "response_item" and item_type in {"function_call", "custom_tool_call"}:
            call_id = str(payload.get("call_id") or "")
            raw = payload.get("arguments") if item_type == "function_call" else payload.get("input")
            name, tool_input = _tool_input(str(payload.get("name") or ""), raw)
            if call_id:
                rollout.calls.setdefault(
                    call_id, CodexCall(call_id, name, tool_input, at, len(rollout.prompts))
                )
        elif kind == "response_item" and item_type in {
            "function_call_output",
            "custom_tool_call_output",
        }:
            found = rollout.calls.get(str(payload.get("call_id") or ""))
            if found is not None:
                found.output = payload.get("output")
                found.answered = True
    return rollout


def _hook_payload(rollout: Rollout, call: CodexCall) -> dict[str, Any]:
    data: dict[str, Any] = {
        "session_id": rollout.session_id,
        "transcript_path": rollout.path,
        "cwd": rollout.cwd,
        "hook_event_name": "PostToolUse",
        "tool_name": call.name,
        "tool_input": call.tool_input,
        "tool_response": call.output,
        "tool_use_id": call.call_id,
    }
    if rollout.subagent:
        data["agent_id"] = rollout.thread_id
    return data


def rollout_import(*, rollout: Rollout, report: ImportReport, only: ImportFilter) -> Session | None:
    """Store one rollout: its session (the root's), new prompts, new answered tool uses."""
    if not rollout.session_id:
        report.problem(f"{rollout.path}: no session_meta line")
        return None
    project = project_for_cwd(rollout.cwd)
    if session_filtered_out(cwd=rollout.cwd, project=project, last=rollout.last, only=only):
        report.add("session", created=False)
        return None
    skip_tools = set(config.get_list("CLAUDE_MEM_SKIP_TOOLS"))
    sanitizer = redaction.Sanitizer()
    with transaction.atomic():
        session, created = imported_session_get_or_create(
            platform=codex.platform,
            session_id=rollout.session_id,
            project=project,
            cwd=rollout.cwd,
            transcript_path=rollout.path,
            first=rollout.first,
            last=rollout.last,
        )
        report.add("session", created)
        # since=None: this importer has always kept a rollout's prompts whatever their date.
        private = imported_prompts_store(
            session=session, prompts=rollout.prompts, sanitizer=sanitizer, report=report, since=None
        )
        stored = stored_tool_use_ids(session)
        events: list[Event] = []
        for call in rollout.calls.values():
            old = bool(only.since and call.at and call.at < only.since)
            if (
                not call.answered
                or call.name in skip_tools
                or old
                or call.prompt_number in private
                or call.call_id[:200] in stored
            ):
                report.add("tool use", created=False)
                continue
            try:
                event = codex.parse("observation", _hook_payload(rollout, call))
            except HookInputError as exc:
                report.problem(f"{rollout.session_id[:8]} {call.call_id}: {exc}")
                continue
            # Today's file on disk is not what the tool saw: no size or hash (see sanitize).
            event.file_facts = {
                os.path.normpath(os.path.join(rollout.cwd or "/", p)): {}
                for p, _ in event.tool_files
            }
            stored.add(call.call_id[:200])
            events.append(
                Event(
                    session=session,
                    kind=Event.Kind.OBSERVATION,
                    tool_name=call.name[:200],
                    tool_use_id=call.call_id[:200],
                    prompt_number=call.prompt_number or None,
                    payload=observation_payload(event=event, project=project, sanitizer=sanitizer),
                    created=call.at or timezone.now(),
                )
            )
            report.add("tool use", created=True)
        # One insert for the rollout's tool uses, not one per call.
        insert_rows(Event, events)
        if events:
            transaction.on_commit(lambda: session_events_process_task(session.pk))
    return session


HELP = "Codex rollouts ($CODEX_HOME/sessions/**/rollout-*.jsonl, or PATH: a file or a folder)."


def add_arguments(parser: Any) -> None:
    import_arguments(parser, path_help="A rollout file or a folder of them.")


def import_from(*, options: dict[str, Any], report: ImportReport, progress: Any) -> ImportReport:
    path, only = import_options(options)
    files = rollout_files(path)
    tick = progress(len(files), "rollouts")
    # The settings as at the start, not re-read for every tool use's privacy pass.
    with config.settings_snapshot():
        for file in files:
            try:
                rollout = rollout_parse(transcript_lines(file, report), path=str(file))
            except OSError as exc:
                report.problem(f"{file}: {exc.strerror or exc}")
            else:
                rollout_import(rollout=rollout, report=report, only=only)
            tick()
    return report
