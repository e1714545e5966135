"""A fake Anthropic Messages API on 127.0.0.1 for the end-to-end tests.

It answers two clients:
- the real Claude Code CLI (streaming `POST /v1/messages?beta=true`): each scripted run is a
  list of steps; the step to play is the number of assistant turns already in the request,
  so the server keeps no per-conversation state and a retry replays the same step;
- cmem's own compressor (the anthropic SDK in the worker): any request that is not Claude
  Code's gets an `<observation>` or `<summary>` XML reply, as claude-mem's observer writes.

Every request body is kept in `requests` so the tests can assert on what Claude Code sent
(the SessionStart context, the `tool_result` of a refused Read).
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A step gets the request body and returns the assistant's content blocks.
Step = Callable[[dict[str, Any]], list[dict[str, Any]]]

_tool_ids = itertools.count(1)


def text(value: str) -> Step:
    return lambda body: [{"type": "text", "text": value}]


def tool(name: str, tool_input: dict[str, Any], *, note: str = "") -> Step:
    def step(body: dict[str, Any]) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": note or f"Using {name}."}]
        blocks.append(
            {
                "type": "tool_use",
                "id": f"toolu_e2e_{next(_tool_ids):04d}",
                "name": name,
                "input": tool_input,
            }
        )
        return blocks

    return step


def assistant_turns(body: dict[str, Any]) -> int:
    return sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content or []:
        if block.get("type") == "text":
            parts.append(block.get("text", ""))
        elif block.get("type") == "tool_result":
            inner = block.get("content")
            parts.append(inner if isinstance(inner, str) else json.dumps(inner))
    return "\n".join(parts)


def request_text(body: dict[str, Any]) -> str:
    """Everything a request says, system prompt included, for substring checks."""
    system = body.get("system")
    head = system if isinstance(system, str) else "\n".join(b.get("text", "") for b in system or [])
    return head + "\n" + "\n".join(message_text(m) for m in body.get("messages", []))


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """All tool_result blocks in a request, in order."""
    out = []
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            out.extend(b for b in content if b.get("type") == "tool_result")
    return out


def _only_tool_results(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and all(b.get("type") == "tool_result" for b in content)


def is_claude_code(body: dict[str, Any], path: str) -> bool:
    # Claude Code always sends its tools and the beta query flag; cmem's compressor sends neither.
    # The `claude` provider is Claude Code too, but its system prompt is cmem's observer's.
    if OBSERVER_MARK in json.dumps(body.get("system", "")):
        return False
    return "beta=true" in path or bool(body.get("tools"))


OBSERVER_MARK = "You are cmem's memory observer"


def default_compressor(body: dict[str, Any]) -> str:
    """An observer reply to the newest user turn: a summary when it asks for one, else one
    observation per `<tool_use n=… tool=…>` it lists, citing it in `uses`."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    said = message_text(users[-1]) if users else ""
    if "PROGRESS SUMMARY" in said:
        return (
            "<summary><request>E2E summary of the session</request>"
            "<investigated>the handlers module</investigated><learned>handlers return dicts</learned>"
            "<completed>edited a handler and wrote a report</completed><next_steps>none</next_steps>"
            "<notes>written by the fake API</notes></summary>"
        )
    blocks = []
    for n, tool_name in re.findall(r'<tool_use\b[^>]*\bn="(\d+)"[^>]*\btool="([^"]+)"', said):
        blocks.append(
            f'<observation uses="{n}"><type>discovery</type><title>E2E API observation {n} of {tool_name}</title>'
            "<subtitle>compressed by the fake Anthropic API</subtitle>"
            "<facts><fact>handlers.py defines sixty handlers</fact></facts>"
            "<narrative>The fake API compressed this tool use.</narrative>"
            "<concepts><concept>how-it-works</concept></concepts></observation>"
        )
    return "\n".join(blocks)


@dataclass
class FakeClaudeAPI:
    """Scripts keyed by a marker that appears in the first user prompt of a run."""

    scripts: dict[str, list[Step]] = field(default_factory=dict)
    compressor: Callable[[dict[str, Any]], str] = default_compressor
    requests: list[dict[str, Any]] = field(default_factory=list)
    compressor_requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def position(self, body: dict[str, Any]) -> tuple[str, int]:
        """(marker, step): the newest user prompt naming a script, and the assistant turns
        since it. Looking from the end keeps resumed sessions (`--resume`) on their own script."""
        messages = body.get("messages", [])
        for index in range(len(messages) - 1, -1, -1):
            message = messages[index]
            if message.get("role") != "user":
                continue
            said = message_text(message)
            for marker in self.scripts:
                if marker in said and not _only_tool_results(message):
                    return marker, sum(1 for m in messages[index:] if m.get("role") == "assistant")
        return "", 0

    def reply_for(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        marker, n = self.position(body)
        steps = self.scripts.get(marker, [])
        # Past the end of the script: finish, never loop (a repeating reply makes Claude Code
        # retry for minutes).
        return steps[n](body) if n < len(steps) else [{"type": "text", "text": "Done."}]

    def requests_for(self, marker: str) -> list[dict[str, Any]]:
        with self.lock:
            return [b for b in self.requests if self.position(b)[0] == marker]

    def start(self) -> FakeClaudeAPI:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                self._json(200, {})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    self._json(
                        400,
                        {
                            "type": "error",
                            "error": {"type": "invalid_request_error", "message": "bad json"},
                        },
                    )
                    return
                if not self.path.startswith("/v1/messages"):
                    self._json(
                        404,
                        {
                            "type": "error",
                            "error": {"type": "not_found_error", "message": self.path},
                        },
                    )
                    return
                if self.path.startswith("/v1/messages/count_tokens"):
                    self._json(200, {"input_tokens": 100})
                    return
                if is_claude_code(body, self.path):
                    with api.lock:
                        api.requests.append(body)
                    blocks = api.reply_for(body)
                else:
                    with api.lock:
                        api.compressor_requests.append(body)
                    blocks = [{"type": "text", "text": api.compressor(body)}]
                stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
                message = {
                    "id": f"msg_e2e_{len(api.requests) + len(api.compressor_requests):04d}",
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model", "claude-fake"),
                    "content": blocks,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": {
                        "input_tokens": 50,
                        "output_tokens": 20,
                        "cache_read_input_tokens": 0,
                        "cache_creation_input_tokens": 0,
                    },
                }
                if body.get("stream"):
                    self._stream(message)
                else:
                    self._json(200, message)

            def _json(self, status: int, data: dict[str, Any]) -> None:
                out = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.send_header("request-id", "req_e2e")
                self.end_headers()
                self.wfile.write(out)

            def _stream(self, message: dict[str, Any]) -> None:
                events: list[tuple[str, dict[str, Any]]] = []
                start = dict(message, content=[], stop_reason=None)
                events.append(("message_start", {"type": "message_start", "message": start}))
                for i, block in enumerate(message["content"]):
                    if block["type"] == "text":
                        events.append(
                            (
                                "content_block_start",
                                {
                                    "type": "content_block_start",
                                    "index": i,
                                    "content_block": {"type": "text", "text": ""},
                                },
                            )
                        )
                        delta = {"type": "text_delta", "text": block["text"]}
                    else:
                        head = {
                            "type": "tool_use",
                            "id": block["id"],
                            "name": block["name"],
                            "input": {},
                        }
                        events.append(
                            (
                                "content_block_start",
                                {"type": "content_block_start", "index": i, "content_block": head},
                            )
                        )
                        delta = {
                            "type": "input_json_delta",
                            "partial_json": json.dumps(block["input"]),
                        }
                    events.append(
                        (
                            "content_block_delta",
                            {"type": "content_block_delta", "index": i, "delta": delta},
                        )
                    )
                    events.append(
                        ("content_block_stop", {"type": "content_block_stop", "index": i})
                    )
                events.append(
                    (
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                            "usage": {"output_tokens": 20},
                        },
                    )
                )
                events.append(("message_stop", {"type": "message_stop"}))
                out = b"".join(
                    f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events
                )
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Content-Length", str(len(out)))
                self.send_header("request-id", "req_e2e")
                self.end_headers()
                self.wfile.write(out)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
