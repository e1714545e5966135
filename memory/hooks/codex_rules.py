"""What Codex needs beyond the shared services (docs/reference/source-rules.md, Codex).

- SessionStart: the index on `startup` and `compact`; none on `resume` (the conversation
  still holds it) nor `fork` (a fork starts from a copy of its parent's history).
- Sub-agents get no SessionStart: SubagentStart gives them the index, except forked ones,
  whose rollout's first line carries `forked_from_id` (they already hold the parent's
  history). A rollout that cannot be read gets the index: too much context beats none.
- Compaction replaces a thread's history, index included. PostCompact cannot inject, so it
  marks the thread (`<data dir>/state/codex-compaction-pending/`); the thread's next
  PostToolUse returns the index once. SessionStart(`compact`), which re-injects it for the
  root thread, clears the mark.
- UserPromptSubmit inside a sub-agent is the parent model's task, not the user's: not stored.
- Codex has no Read tool: a shell command that only reads files (see codex_shell_reads) goes
  through the file-read gate. The default is `context` mode
  (CLAUDE_MEM_CODEX_SHELL_READ_GATE): the command runs and the model gets the file's
  timeline as `additionalContext`; `deny` applies the gate's refusals.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import replace
from pathlib import Path

from memory import config
from memory.agents.base import HookEvent, HookResult
from memory.agents.codex_shell_reads import shell_read_paths
from memory.briefing import context
from memory.briefing.file_views import session_ensure
from memory.briefing.gate import gate_decide
from memory.capture import ingest as capture
from memory.ledger import ledger_record
from memory.models import LedgerEntry
from memory.projects import is_excluded, project_for_cwd, remote_request

log = logging.getLogger(__name__)

CONTEXT_SOURCES = {"startup", "compact"}
# A rollout's first line (session_meta) carries base instructions: a few KB; cap the read.
FIRST_LINE_MAX = 1 << 20


def codex_dispatch(*, event: HookEvent) -> HookResult | None:
    """The Codex-specific answer for this event, or None to use the shared service."""
    if event.event == "context":
        return session_start(event=event)
    if event.event == "session-init" and event.agent_id:
        return HookResult()
    if event.event == "file-context":
        return shell_read_gate(event=event)
    if event.event == "observation":
        return observation_record(event=event)
    if event.event == "subagent-context":
        return subagent_context(event=event)
    if event.event == "compaction":
        return compaction_mark(event=event)
    return None


# --- compaction marks -----------------------------------------------------------------------


def _mark_path(event: HookEvent) -> Path:
    # Sub-agents share the root's session_id; agent_id names the thread.
    thread = f"{event.session_id}\0{event.agent_id}".encode()
    name = hashlib.sha256(thread).hexdigest()[:32]
    return config.data_dir() / "state" / "codex-compaction-pending" / name


def compaction_mark(*, event: HookEvent) -> HookResult:
    """PostCompact: this thread lost the index; its next PostToolUse brings it back."""
    if is_excluded(event.cwd, project_for_cwd(event.cwd)):
        return HookResult()
    config.write_atomic(_mark_path(event), f"{event.session_id} {event.agent_id}\n".encode())
    return HookResult()


def compaction_pending_take(*, event: HookEvent) -> bool:
    """True once per mark: the mark is removed by whoever sees it first."""
    try:
        _mark_path(event).unlink()
    except FileNotFoundError:
        return False
    return True


# --- services -------------------------------------------------------------------------------


def _index(event: HookEvent) -> str:
    """The project's index for this event, booked in the ledger; "" for excluded projects."""
    project = project_for_cwd(event.cwd)
    if is_excluded(event.cwd, project):
        return ""
    text = context.context_text(project=project.name, root=project.root, platform=event.platform)
    session = session_ensure(event=event, project=project)
    ledger_record(
        kind=LedgerEntry.Kind.INJECTION,
        session=session,
        project=project.name,
        shown=text,
        detail=f"session_start:{event.source or event.hook_event_name}"[:32],
    )
    return text


def session_start(*, event: HookEvent) -> HookResult:
    source = (event.source or "startup").lower()
    if source not in CONTEXT_SOURCES:
        return HookResult()
    # Re-injected here, so the thread's next PostToolUse must not send it again.
    compaction_pending_take(event=event)
    return context.context_for_hook(event=event)


def observation_record(*, event: HookEvent) -> HookResult:
    """PostToolUse: store the tool use; a thread compacted since its last tool use gets the
    index back, once."""
    result = capture.observation_record(event=event)
    if compaction_pending_take(event=event):
        text = _index(event)
        if text:
            return HookResult(context=text, system_message=result.system_message)
    return result


def rollout_forked(path: str) -> bool:
    """Does this rollout start as a fork (its session_meta has `forked_from_id`)? False when
    it cannot be read: such a sub-agent gets the index."""
    if not path or remote_request():
        return False  # team mode: the rollout is on the client's disk, never read here
    try:
        with open(path, "rb") as fh:
            line = fh.readline(FIRST_LINE_MAX)
        meta = json.loads(line.decode("utf-8", "replace"))
    except (OSError, ValueError) as exc:
        log.debug("rollout %s unreadable (%s): the sub-agent gets the index", path, exc)
        return False
    payload = meta.get("payload") if isinstance(meta, dict) else None
    return isinstance(payload, dict) and bool(payload.get("forked_from_id"))


def subagent_context(*, event: HookEvent) -> HookResult:
    """SubagentStart: the index for the sub-agent's first request, unless it is a fork."""
    if rollout_forked(event.transcript_path):
        return HookResult()
    text = _index(event)
    return HookResult(context=text) if text else HookResult()


def shell_read_gate(*, event: HookEvent) -> HookResult:
    """PreToolUse Bash: each file of a read-only command through the file-read gate.

    1. Off, not Bash, or not a plain read: pass (`{}`).
    2. Each path is decided as a Read of the whole file, in the configured mode.
    3. One refusal refuses the command; otherwise the timelines are joined as context.
    """
    mode = config.codex_shell_read_gate()
    command = event.tool_input.get("command")
    if mode not in {"context", "deny"} or event.tool_name != "Bash" or not isinstance(command, str):
        return HookResult()
    paths = shell_read_paths(command)
    contexts: list[str] = []
    for path in paths:
        probe = replace(event, tool_name="Read", tool_input={"file_path": path})
        result = gate_decide(event=probe, mode=mode)
        if result.gate is None:
            continue
        if result.gate.decision == "deny":
            return result
        if result.gate.context:
            contexts.append(
                result.gate.context if len(paths) == 1 else f"{path}:\n{result.gate.context}"
            )
    if not contexts:
        return HookResult()
    return HookResult(context="\n\n".join(contexts))
