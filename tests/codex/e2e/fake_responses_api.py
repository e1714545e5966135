"""A fake OpenAI Responses API on 127.0.0.1 for the Codex end-to-end tests.

The real `codex` CLI only calls `POST /v1/responses` with `stream: true` and reads
server-sent events. Each scripted conversation is keyed by a marker in its first user
prompt (a sub-agent's by the task its parent gave it); every request of that conversation
plays the next step. Compaction requests (`request_kind: "compaction"` in the
`x-codex-turn-metadata` header) get a summary and do not advance the script. Retries are
off in the CLI's config, so one request is one step.

Every request (headers and body) is kept in `requests` for the tests.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Item = dict[str, Any]
# A step returns the output items and the usage the response reports.
Step = Callable[[dict[str, Any]], tuple[list[Item], int]]

_ids = itertools.count(1)
SUMMARY = "FAKE-COMPACTION-SUMMARY: the file was read and patched."


def say(text: str, *, tokens: int = 200) -> Step:
    def step(body: dict[str, Any]) -> tuple[list[Item], int]:
        n = next(_ids)
        item = {
            "type": "message",
            "id": f"msg_fake_{n:04d}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        return [item], tokens

    return step


def call(name: str, arguments: dict[str, Any], *, tokens: int = 200, namespace: str = "") -> Step:
    """A function call (`exec_command`, `spawn_agent`…); `tokens` is the usage reported, which
    drives Codex's auto compaction."""

    def step(body: dict[str, Any]) -> tuple[list[Item], int]:
        n = next(_ids)
        item: Item = {
            "type": "function_call",
            "id": f"fc_fake_{n:04d}",
            "call_id": f"call_fake_{n:04d}",
            "name": name,
            "arguments": json.dumps(arguments),
            "status": "completed",
        }
        if namespace:
            item["namespace"] = namespace
        return [item], tokens

    return step


def custom(name: str, text: str, *, tokens: int = 200) -> Step:
    """A freeform tool call (apply_patch for the gpt-5 family)."""

    def step(body: dict[str, Any]) -> tuple[list[Item], int]:
        n = next(_ids)
        item = {
            "type": "custom_tool_call",
            "id": f"ctc_fake_{n:04d}",
            "call_id": f"call_fake_{n:04d}",
            "name": name,
            "input": text,
            "status": "completed",
        }
        return [item], tokens

    return step


def input_text(item: Item) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(str(part.get("text", "")) for part in content or [] if isinstance(part, dict))


def developer_texts(body: dict[str, Any]) -> list[str]:
    return [
        input_text(i)
        for i in body.get("input", [])
        if i.get("type") == "message" and i.get("role") == "developer"
    ]


def user_texts(body: dict[str, Any]) -> list[str]:
    return [
        input_text(i)
        for i in body.get("input", [])
        if i.get("type") == "message" and i.get("role") == "user"
    ]


@dataclass
class Request:
    headers: dict[str, str]
    body: dict[str, Any]
    marker: str = ""

    @property
    def kind(self) -> str:
        try:
            meta = json.loads(self.headers.get("x-codex-turn-metadata", "{}"))
        except ValueError:
            return ""
        return str(meta.get("request_kind", ""))


@dataclass
class FakeResponsesAPI:
    scripts: dict[str, list[Step]]
    requests: list[Request] = field(default_factory=list)
    _played: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> FakeResponsesAPI:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # http.server's name
                size = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(size)
                if self.headers.get("Content-Encoding") == "zstd":
                    self.send_error(415)
                    return
                body = json.loads(raw or b"{}")
                request = Request(
                    headers={k.lower(): v for k, v in self.headers.items()}, body=body
                )
                items, tokens = api.answer(request)
                self._stream(items, tokens)

            def _stream(self, items: list[Item], tokens: int) -> None:
                rid = f"resp_fake_{next(_ids):04d}"
                events: list[dict[str, Any]] = [
                    {"type": "response.created", "response": {"id": rid}},
                ]
                for index, item in enumerate(items):
                    events.append(
                        {"type": "response.output_item.added", "output_index": index, "item": item}
                    )
                    events.append(
                        {"type": "response.output_item.done", "output_index": index, "item": item}
                    )
                events.append(
                    {
                        "type": "response.completed",
                        "response": {
                            "id": rid,
                            "usage": {
                                "input_tokens": tokens,
                                "input_tokens_details": {"cached_tokens": 0},
                                "output_tokens": 20,
                                "output_tokens_details": {"reasoning_tokens": 0},
                                "total_tokens": tokens + 20,
                            },
                        },
                    }
                )
                payload = b"".join(
                    f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events
                )
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _marker(self, body: dict[str, Any]) -> str:
        # The newest user message that names a script decides (a fork also holds its
        # parent's prompts, earlier in its input).
        for said in reversed(user_texts(body)):
            for marker in self.scripts:
                if marker in said:
                    return marker
        return ""

    def answer(self, request: Request) -> tuple[list[Item], int]:
        with self._lock:
            request.marker = self._marker(request.body)
            self.requests.append(request)
            if request.kind == "compaction":
                return say(SUMMARY)(request.body)
            steps = self.scripts.get(request.marker)
            if not steps:
                return say(f"no script for this conversation ({request.marker or 'no marker'})")(
                    request.body
                )
            n = self._played.get(request.marker, 0)
            self._played[request.marker] = n + 1
        step = steps[min(n, len(steps) - 1)]
        return step(request.body)

    def requests_for(self, marker: str) -> list[Request]:
        return [r for r in self.requests if r.marker == marker]
