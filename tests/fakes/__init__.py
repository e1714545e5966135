"""Test doubles of things outside cmem (the Anthropic API), and builders of captured events
shaped like the real hook payloads in tests/fixtures."""

from __future__ import annotations

import copy
import hashlib
import json
import os
from pathlib import Path
from typing import Any

CLAUDE_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "claude-code-2.1.332"

_POST_TOOL_USE = json.loads((CLAUDE_FIXTURES / "PostToolUse.json").read_text())
_FAILURE = json.loads((CLAUDE_FIXTURES / "PostToolUseFailure.json").read_text())
_counter = iter(range(1, 10**9))


def file_facts(path: Path, root: Path, role: str) -> dict[str, Any]:
    """What capture writes into `Event.payload["cmem_files"]` for one file."""
    entry: dict[str, Any] = {
        "path": os.path.relpath(path, root),
        "abs": str(path),
        "role": role,
        "size": None,
        "mtime": None,
        "sha256": "",
    }
    if path.exists():
        st = path.stat()
        entry.update(
            size=st.st_size, mtime=st.st_mtime, sha256=hashlib.sha256(path.read_bytes()).hexdigest()
        )
    return entry


def post_tool_use(
    tool_name: str,
    tool_input: dict[str, Any],
    tool_response: Any = None,
    *,
    cwd: str,
    error: str = "",
    files: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A PostToolUse (or PostToolUseFailure, with `error`) payload like Claude Code 2.1.332 sends."""
    base = copy.deepcopy(_FAILURE if error else _POST_TOOL_USE)
    base.update(
        cwd=cwd,
        tool_name=tool_name,
        tool_input=tool_input,
        tool_use_id=f"toolu_test_{next(_counter):05d}",
    )
    if error:
        base["error"] = error
        base.pop("tool_response", None)
    else:
        base["tool_response"] = tool_response
    base["cmem_files"] = files or []
    return base


def read_payload(path: Path, root: Path) -> dict[str, Any]:
    content = path.read_text()
    lines = content.count("\n") + 1
    response = {
        "type": "text",
        "file": {
            "filePath": str(path),
            "content": content,
            "numLines": lines,
            "startLine": 1,
            "totalLines": lines,
        },
    }
    return post_tool_use(
        "Read",
        {"file_path": str(path)},
        response,
        cwd=str(root),
        files=[file_facts(path, root, "read")],
    )


def edit_payload(path: Path, root: Path, old: str, new: str) -> dict[str, Any]:
    """An Edit as Claude Code reports it; the response repeats the whole original file."""
    original = path.read_text()
    path.write_text(original.replace(old, new, 1))
    response = {
        "filePath": str(path),
        "oldString": old,
        "newString": new,
        "originalFile": original,
        "structuredPatch": [],
        "userModified": False,
        "replaceAll": False,
    }
    return post_tool_use(
        "Edit",
        {"file_path": str(path), "old_string": old, "new_string": new},
        response,
        cwd=str(root),
        files=[file_facts(path, root, "modified")],
    )


def write_payload(path: Path, root: Path, content: str) -> dict[str, Any]:
    created = not path.exists()
    path.write_text(content)
    response = {
        "type": "create" if created else "update",
        "filePath": str(path),
        "content": content,
        "structuredPatch": [],
    }
    return post_tool_use(
        "Write",
        {"file_path": str(path), "content": content},
        response,
        cwd=str(root),
        files=[file_facts(path, root, "modified")],
    )


def bash_payload(
    command: str, root: Path, *, stdout: str = "", stderr: str = "", exit_code: int = 0
) -> dict[str, Any]:
    if exit_code:
        return post_tool_use(
            "Bash",
            {"command": command, "description": "run it"},
            cwd=str(root),
            error=f"Exit code {exit_code}\n{stdout}{stderr}",
        )
    response = {
        "stdout": stdout,
        "stderr": stderr,
        "interrupted": False,
        "isImage": False,
        "noOutputExpected": False,
    }
    return post_tool_use(
        "Bash", {"command": command, "description": "run it"}, response, cwd=str(root)
    )


def add_event(
    session: Any, payload: dict[str, Any], *, kind: str = "observation", prompt_number: int = 1
) -> Any:
    from memory.models import Event

    return Event.objects.create(
        session=session,
        kind=kind,
        tool_name=payload.get("tool_name", ""),
        tool_use_id=payload.get("tool_use_id", "")
        if kind == "observation"
        else f"stop:{next(_counter)}",
        prompt_number=prompt_number,
        payload=payload,
    )
