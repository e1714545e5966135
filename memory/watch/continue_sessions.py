"""Continue CLI's session files as events (verified with `cn` 1.5.47, see
docs/guide/agents/continue-cli.md).

`cn` keeps each session in `$CONTINUE_GLOBAL_DIR/sessions/<sessionId>.json` (default
`~/.continue/sessions/`), rewritten whole after every message (not atomically):
`{sessionId, title, workspaceDirectory, history: [item…], usage}`, an item being
`{message: {role, content, toolCalls?}, contextItems, toolCallStates?}`. Each tool call's
state has `toolCallId`, `parsedArgs`, `status` (done, errored, canceled once over) and
`output: [{content, name}]`. `sessions.json` beside them is only an index.

Here one item becomes the events a hook would have sent: a user message a prompt
(session-init); an assistant message's finished tool calls one observation each; an
assistant message without tool calls the end of a turn (summarize). An item whose tool
calls are still running is not complete: it is read again later.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

PLATFORM = "continue"
INDEX_FILE = "sessions.json"
FINISHED = frozenset({"done", "errored", "canceled"})


@dataclass
class Item:
    """One history item: its events (cmem event, payload) and whether it is final yet."""

    digest: str
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    complete: bool = True
    ends_turn: bool = False


class SessionFileError(ValueError):
    """The file is not a Continue session (the message says why)."""


def _text(content: Any) -> str:
    """A message's content: a string, or a list of parts of which the text ones count."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return ""


def _digest(item: Any) -> str:
    """What identifies an item already read: its message and its tool calls' states."""
    message = item.get("message") if isinstance(item, dict) else None
    states = item.get("toolCallStates") if isinstance(item, dict) else None
    keyed = [
        (s.get("toolCallId"), s.get("status"))
        for s in (states if isinstance(states, list) else [])
        if isinstance(s, dict)
    ]
    body = json.dumps([message, keyed], sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def _output(state: dict[str, Any]) -> str:
    output = state.get("output")
    if isinstance(output, list):
        texts = [o.get("content") for o in output if isinstance(o, dict)]
        return "\n".join(t for t in texts if isinstance(t, str))
    return output if isinstance(output, str) else ""


def _arguments(state: dict[str, Any]) -> dict[str, Any]:
    parsed = state.get("parsedArgs")
    if isinstance(parsed, dict):
        return parsed
    call = state.get("toolCall")
    function = call.get("function") if isinstance(call, dict) else None
    raw = function.get("arguments") if isinstance(function, dict) else None
    try:
        value = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _tool_name(state: dict[str, Any]) -> str:
    call = state.get("toolCall")
    function = call.get("function") if isinstance(call, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    return name if isinstance(name, str) else ""


def session_items(doc: Any, *, path: str) -> tuple[str, list[Item]]:
    """(sessionId, its items) of a parsed session file; SessionFileError when it is none."""
    if not isinstance(doc, dict) or not isinstance(doc.get("history"), list):
        raise SessionFileError("not a Continue session (no `history` list)")
    session_id = doc.get("sessionId")
    if not isinstance(session_id, str) or not session_id:
        raise SessionFileError("not a Continue session (no `sessionId`)")
    cwd = doc.get("workspaceDirectory") if isinstance(doc.get("workspaceDirectory"), str) else ""
    base = {"session_id": session_id, "cwd": cwd, "transcript_path": path}
    items: list[Item] = []
    occurrences: dict[str, int] = {}
    for index, entry in enumerate(doc["history"]):
        # The n-th item with this content: the same prompt sent twice is two items, and an
        # item keeps its digest when a rewritten history moves it.
        content = _digest(entry)
        occurrences[content] = occurrences.get(content, 0) + 1
        item = Item(digest=f"{content}.{occurrences[content]}")
        items.append(item)
        message = entry.get("message") if isinstance(entry, dict) else None
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "user":
            item.events.append(("session-init", {**base, "prompt": _text(message.get("content"))}))
            continue
        if role != "assistant":
            continue
        states = entry.get("toolCallStates")
        states = [s for s in states if isinstance(s, dict)] if isinstance(states, list) else []
        if message.get("toolCalls") or states:
            if any(s.get("status") not in FINISHED for s in states) or not states:
                item.complete = False  # still running (or its states not written yet)
                break
            for state in states:
                status = state.get("status")
                payload = {
                    **base,
                    "tool_name": _tool_name(state),
                    "tool_input": _arguments(state),
                    "tool_response": _output(state),
                    # Continue's call ids come from the model's API: unique in a session only.
                    "tool_use_id": f"continue:{session_id}:{state.get('toolCallId') or index}",
                }
                if status != "done":
                    payload["error"] = _output(state) or f"tool call {status}"
                item.events.append(("observation", payload))
            continue
        # An assistant message without tool calls: the turn is over.
        item.ends_turn = True
        item.events.append((
            "summarize",
            {**base, "last_assistant_message": _text(message.get("content")),
             "prompt_id": f"continue:{session_id}:{item.digest}"},
        ))  # fmt: skip
    return session_id, items
