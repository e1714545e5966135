"""The hook hands deliverable bytes over itself: stdlib only, bounded, never blocking.

claude-mem's Stop copies a turn's deliverables before the worktree or temp folder they live
in is deleted (docs/reference/source-rules.md). The local worker copies them itself while it
answers the Stop (same disk, same moment), so the hook client reads bytes only when it cannot:

- a `work_state_write` call's PostToolUse (always): the MCP server cannot tell which
  request a call belongs to, the hook can, so the hook reads the attached files;
- a Stop the worker did not take (down, timed out, 5xx): the event is spooled with the
  bytes of the turn's files written outside the project, read from the transcript;
- a Stop sent to a remote team worker, which never reads a path a client names.

The same trust rules as the worker's copy: every path component opened with O_NOFOLLOW
(`open_no_links`, which deliverables.services uses too), regular files only, no hard
links (st_nlink > 1), no secret location (memory.privacy.secret_locations), and a FIFO never
blocks (O_NONBLOCK, then fstat). Bounds per event: HANDOVER_MAX_BYTES of file bytes, at
most MAX_FILES files, HANDOVER_TIME_S of reading; what does not fit is named as `skipped`
(a local worker may still copy it from disk, a remote one does not). Text is redacted on
the worker before it is stored, and by memory.privacy.spool_scrub before a spool file is
written.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import time
from typing import Any

from memory.agents.tool_names import is_cmem_tool
from memory.capture.turn_files import (
    attach_paths,
    attachments_of,
    last_turn_tool_uses,
    unique,
    written_paths,
)
from memory.privacy.secret_locations import refusal_reason

TOOL = "work_state_write"
# File bytes one event carries (before base64), its file count, and the time spent reading.
HANDOVER_MAX_BYTES = 4 * 1024 * 1024
MAX_FILES = 50
HANDOVER_TIME_S = 1.0
# Room kept in the request for the event itself (the worker refuses bodies over
# CMEM_MAX_REQUEST_BYTES, 8 MiB by default).
_HEADROOM = 64 * 1024
_CHUNK = 256 * 1024


def open_no_links(path: str) -> int:
    """A read-only descriptor of `path`, opened one component at a time with O_NOFOLLOW
    relative to its parent's descriptor: a symlink anywhere in the path (a parent folder
    swapped for a link between Write and Stop included) fails with ELOOP/ENOTDIR instead of
    being followed. A FIFO never blocks (O_NONBLOCK)."""
    if not os.path.isabs(path) or path != os.path.normpath(path):
        raise OSError(0, "not a normalised absolute path")
    parts = [p for p in path.split(os.sep) if p]
    if not parts:
        raise OSError(0, "no file name")
    dir_fd = os.open(os.sep, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
            os.close(dir_fd)
            dir_fd = next_fd
        return os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)


class _Budget:
    def __init__(self, room: int, max_file: int) -> None:
        self.room = max(0, room)
        self.max_file = max_file
        self.deadline = time.monotonic() + HANDOVER_TIME_S

    def over(self) -> bool:
        return time.monotonic() >= self.deadline


def read_entry(path: str, budget: _Budget) -> dict[str, Any]:
    """One file as the event carries it: its bytes (base64), or why it is refused (the
    worker would refuse it too) or skipped (no room or time left)."""
    reason = refusal_reason(path)
    if reason:
        return {"path": path, "refused": reason}
    if budget.over():
        return {"path": path, "skipped": "out of time"}
    try:
        fd = open_no_links(path)
    except OSError as exc:
        return {"path": path, "refused": exc.strerror or "cannot be opened without links"}
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return {"path": path, "refused": "not a regular file"}
        if st.st_nlink > 1:
            return {"path": path, "refused": f"{st.st_nlink} hard links"}
        if st.st_size > budget.max_file:
            return {"path": path, "refused": "larger than CLAUDE_MEM_DELIVERABLES_MAX_BYTES"}
        if st.st_size > budget.room:
            return {"path": path, "skipped": "no room left in this event"}
        chunks: list[bytes] = []
        size = 0
        while size <= budget.room:
            chunk = os.read(fd, min(_CHUNK, budget.room + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if budget.over():
                return {"path": path, "skipped": "out of time"}
        if size > budget.room:  # it grew while we read it
            return {"path": path, "skipped": "no room left in this event"}
    except OSError as exc:
        return {"path": path, "refused": exc.strerror or "unreadable"}
    finally:
        os.close(fd)
    data = b"".join(chunks)
    budget.room -= size
    return {
        "path": path,
        "size": size,
        "sha256": hashlib.sha256(data).hexdigest(),
        "data": base64.b64encode(data).decode("ascii"),
    }


def _absolute(raw: str, cwd: str) -> str:
    return os.path.normpath(raw if os.path.isabs(raw) else os.path.join(cwd or "/", raw))


def _source_root(cwd: str) -> str:
    """The project's source tree as the hook can tell it: the git top level above cwd
    (`.git` folder or worktree file), else cwd. The worker checks again with its own root."""
    here = os.path.normpath(cwd) if cwd else ""
    while here and here != os.sep:
        if os.path.exists(os.path.join(here, ".git")):
            return here
        here = os.path.dirname(here)
    return os.path.normpath(cwd) if cwd else ""


def _inside(path: str, root: str) -> bool:
    return bool(root) and (path == root or path.startswith(root.rstrip(os.sep) + os.sep))


def attached_paths(data: dict[str, Any]) -> list[str]:
    """The paths a `work_state_write` call named, absolute (relative ones are the cwd's)."""
    cwd = data.get("cwd") if isinstance(data.get("cwd"), str) else ""
    return unique([_absolute(p, str(cwd)) for p in attach_paths(data.get("tool_input"))])


def stop_paths(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The turn's files, from the transcript's last turn, each with what the worker should
    mark on it: written outside the source tree (no marks), or attached with
    `work_state_write` (anywhere; marked attached, with the call's title and note)."""
    transcript = data.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return []
    cwd = str(data.get("cwd")) if isinstance(data.get("cwd"), str) else ""
    root = _source_root(cwd)
    uses = last_turn_tool_uses(transcript)  # one read of the transcript's tail
    out: dict[str, dict[str, Any]] = {}
    for raw in written_paths(uses):
        path = _absolute(raw, cwd)
        if not _inside(path, root):
            out.setdefault(path, {})
    for call in attachments_of(uses):
        marks = {"attached": True, "title": call["title"][:200], "note": call["note"][:2000]}
        for raw in call["paths"]:
            out[_absolute(raw, cwd)] = marks
    return list(out.items())


def is_attach_call(data: dict[str, Any]) -> bool:
    name = data.get("tool_name")
    return isinstance(name, str) and is_cmem_tool(name, TOOL)


def handover_add(body: bytes, *, kind: str, request_limit: int, max_file: int) -> bytes:
    """`body` with `cmem_handover` added: the bytes of a `work_state_write` call's files
    (kind "attach") or of a Stop's deliverables (kind "stop"). Unchanged when there is
    nothing to hand over, the body is not a JSON object, or it already carries a handover."""
    try:
        data = json.loads(body.decode("utf-8", "replace"))
    except ValueError:
        return body
    if not isinstance(data, dict) or "cmem_handover" in data:
        return body
    if kind == "attach":
        # A failed call (PostToolUseFailure) attached nothing: no bytes to read.
        if not is_attach_call(data) or data.get("hook_event_name") == "PostToolUseFailure":
            return body
        paths: list[tuple[str, dict[str, Any]]] = [(p, {}) for p in attached_paths(data)]
    else:
        paths = stop_paths(data)
    if not paths:
        return body
    room = min(HANDOVER_MAX_BYTES, (request_limit - len(body) - _HEADROOM) * 3 // 4)
    budget = _Budget(room, max_file)
    files = [{**read_entry(p, budget), **marks} for p, marks in paths[:MAX_FILES]]
    files += [{"path": p, "skipped": "too many files", **m} for p, m in paths[MAX_FILES:]]
    data["cmem_handover"] = {"kind": kind, "files": files}
    return json.dumps(data).encode()
