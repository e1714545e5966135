"""Which files a turn produced: its Write/Edit tool uses and the files its `work_state_write`
calls attached, read from the transcript's last turn.

Stdlib only: the worker uses it at Stop (deliverables), and the hook client uses it when it
must hand a Stop's deliverables over itself (worker down, or a remote team worker), so the
bytes are read before the worktree or temp folder holding them is deleted.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from memory.agents.tool_names import is_cmem_tool

ATTACH_TOOL = "work_state_write"
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "apply_patch"})
# Bounded read of the transcript's tail: the last turn is what matters, and Stop must be fast.
TRANSCRIPT_TAIL_BYTES = 8 * 1024 * 1024
_PATCH_FILE_RE = re.compile(
    r"^\*\*\* (?:Add|Update) File: (.+)$|^\*\*\* Move to: (.+)$", re.MULTILINE
)


def paths_from_tool_input(tool_name: str, tool_input: Any) -> list[str]:
    if not isinstance(tool_input, dict):
        return []
    if tool_name == "apply_patch":
        patch = (
            tool_input.get("command") or tool_input.get("patch") or tool_input.get("input") or ""
        )
        if not isinstance(patch, str):
            return []
        return [(m.group(1) or m.group(2)).strip() for m in _PATCH_FILE_RE.finditer(patch)]
    path = tool_input.get("file_path") or tool_input.get("notebook_path") or tool_input.get("path")
    return [path] if isinstance(path, str) and path else []


def _is_prompt_line(entry: dict[str, Any]) -> bool:
    """A user line that starts a turn (a typed prompt), not a tool result or meta line."""
    if entry.get("type") != "user" or entry.get("isSidechain") or entry.get("isMeta"):
        return False
    content = (entry.get("message") or {}).get("content")
    if isinstance(content, str):
        return True
    if isinstance(content, list):
        return not any(isinstance(c, dict) and c.get("type") == "tool_result" for c in content)
    return False


def _transcript_tail(path: Path) -> list[str]:
    with path.open("rb") as fh:
        size = fh.seek(0, os.SEEK_END)
        start = max(0, size - TRANSCRIPT_TAIL_BYTES)
        fh.seek(start)
        data = fh.read()
    lines = data.decode("utf-8", errors="replace").splitlines()
    return lines[1:] if start else lines  # the first line of a tail read is partial


def last_turn_tool_uses(transcript_path: str) -> list[tuple[str, Any]]:
    """(name, input) of the last turn's tool uses whose result came back without an error,
    in order. A tool use the user refused, or one that failed, produced nothing."""
    if not transcript_path:
        return []
    try:
        lines = _transcript_tail(Path(transcript_path).expanduser())
    except OSError:
        return []
    turn: list[dict[str, Any]] = []
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, dict):
            continue
        if _is_prompt_line(entry):
            break
        turn.append(entry)
    succeeded = _succeeded_tool_use_ids(turn)
    uses: list[tuple[str, Any]] = []
    for entry in reversed(turn):
        if entry.get("type") != "assistant":
            continue
        content = (entry.get("message") or {}).get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_use"
                and isinstance(block.get("name"), str)
                and block.get("id") in succeeded
            ):
                uses.append((block["name"], block.get("input")))
    return uses


def paths_from_transcript(transcript_path: str) -> list[str]:
    """File paths written by Write/Edit/MultiEdit/NotebookEdit tool uses in the last turn.

    PostToolUse hooks are async, so the last tool use's event may still be in flight when
    Stop arrives; the transcript is already on disk and closes that gap.
    """
    return written_paths(last_turn_tool_uses(transcript_path))


def written_paths(uses: list[tuple[str, Any]]) -> list[str]:
    paths: list[str] = []
    for name, tool_input in uses:
        if name in WRITE_TOOLS:
            paths.extend(paths_from_tool_input(name, tool_input))
    return paths


def attach_paths(tool_input: Any) -> list[str]:
    """The paths a `work_state_write` call named (its `paths`, or one `path`), as given."""
    if not isinstance(tool_input, dict):
        return []
    raw = tool_input.get("paths")
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        raw = [tool_input.get("path")]
    return [p for p in raw if isinstance(p, str) and p]


def attachments_from_transcript(transcript_path: str) -> list[dict[str, Any]]:
    """The last turn's successful `work_state_write` calls: {"paths", "title", "note"} each.

    The call's own PostToolUse hook records them when it completes, but it is async and
    Claude Code does not wait for it when the session ends right after the call (often the
    turn's last tool use); claude-mem's Stop takes them from the transcript as well."""
    return attachments_of(last_turn_tool_uses(transcript_path))


def attachments_of(uses: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for name, tool_input in uses:
        if is_cmem_tool(name, ATTACH_TOOL) and isinstance(tool_input, dict):
            title, note = tool_input.get("title"), tool_input.get("note")
            found.append(
                {
                    "paths": attach_paths(tool_input),
                    "title": title if isinstance(title, str) else "",
                    "note": note if isinstance(note, str) else "",
                }
            )
    return found


def _succeeded_tool_use_ids(turn: list[dict[str, Any]]) -> set[str]:
    """Ids of the turn's tool uses whose tool_result is present and not an error."""
    ok: set[str] = set()
    for entry in turn:
        if entry.get("type") != "user":
            continue
        content = (entry.get("message") or {}).get("content")
        if not isinstance(content, list):
            continue
        result = entry.get("toolUseResult")
        failed_line = isinstance(result, str) and result.lower().startswith("error")
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            tool_use_id = block.get("tool_use_id")
            if isinstance(tool_use_id, str) and not block.get("is_error") and not failed_line:
                ok.add(tool_use_id)
    return ok


def unique(paths: list[str]) -> list[str]:
    seen: dict[str, None] = {}
    for p in paths:
        seen.setdefault(p, None)
    return list(seen)
