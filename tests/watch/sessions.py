"""Continue CLI session files as `cn` 1.5.47 writes them (the shape seen in a real run:
docs/guide/agents/continue-cli.md), built item by item for the watch tests."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def user(text: str) -> dict[str, Any]:
    return {"message": {"role": "user", "content": text}, "contextItems": [], "editorState": text}


def tool(
    call_id: str, name: str, args: dict[str, Any], output: str, status: str = "done"
) -> dict[str, Any]:
    call = {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}  # fmt: skip
    state = {"toolCallId": call_id, "toolCall": call, "status": status, "parsedArgs": args}
    if status in ("done", "errored"):
        state["output"] = [{"content": output, "name": "Tool Result"}]
    return {
        "message": {"role": "assistant", "content": "", "toolCalls": [call]},
        "contextItems": [],
        "toolCallStates": [state],
    }


def answer(text: str) -> dict[str, Any]:
    return {"message": {"role": "assistant", "content": text}, "contextItems": []}


def turn(n: int, cwd: str) -> list[dict[str, Any]]:
    """One whole turn: a prompt, a Read, the answer."""
    return [
        user(f"prompt number {n}: read handlers.py"),
        tool(f"call_{n}", "Read", {"filepath": "handlers.py"}, f"Content of handlers.py: {n}"),
        answer(f"Read it ({n})."),
    ]


def write_session(
    folder: Path, session_id: str, cwd: str, history: list[Any], *, age_s: float = 60
) -> Path:
    """Rewrite the whole file, as `cn` does; its mtime `age_s` in the past (a settled file)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.json"
    doc = {"sessionId": session_id, "title": "Untitled Session", "workspaceDirectory": cwd,
           "history": history, "usage": {"promptTokens": 1}}  # fmt: skip
    path.write_text(json.dumps(doc, indent=2))
    stamp = path.stat().st_mtime - age_s
    os.utime(path, (stamp, stamp))
    return path
