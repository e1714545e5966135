"""Fake model APIs on 127.0.0.1 for the Gemini CLI, Copilot CLI and OpenCode end-to-end tests.

- `FakeGeminiAPI`: `POST /v1beta/models/<model>:streamGenerateContent?alt=sse` (and the
  non-streaming `:generateContent`), what `gemini` calls with GOOGLE_GEMINI_BASE_URL set.
- `FakeChatAPI`: OpenAI Chat Completions (`POST /v1/chat/completions`, streamed or not),
  what Copilot CLI's BYOK provider and OpenCode's `@ai-sdk/openai-compatible` call.

Each scripted conversation is keyed by a marker in its first user message; every request
of that conversation that offers tools plays the next step (a tool call or a final text).
Requests without tools (titles, summaries, next-speaker checks) get a short text and do
not advance the script. Every request is kept in `requests` for the tests.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self


@dataclass
class Step:
    """A tool call (`tool` + `args`) or, with tool empty, the final `text`."""

    tool: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    text: str = ""


def call(tool: str, **args: Any) -> Step:
    return Step(tool=tool, args=args)


def say(text: str) -> Step:
    return Step(text=text)


@dataclass
class Request:
    path: str
    body: dict[str, Any]
    marker: str
    step: int  # index of the step it played, -1 for a side request

    @property
    def text(self) -> str:
        return json.dumps(self.body)


class _Base:
    def __init__(self, scripts: dict[str, list[Step]]) -> None:
        self.scripts = scripts
        self.requests: list[Request] = []
        self._played: dict[str, int] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def requests_for(self, marker: str) -> list[Request]:
        return [r for r in self.requests if r.marker == marker and r.step >= 0]

    def _marker(self, texts: list[str]) -> str:
        """The conversation's marker: in the first user message naming one, the one named
        last (an index prepended to the prompt may name an earlier run's marker)."""
        for text in texts:
            found = [m for m in self.scripts if m in text]
            if found:
                return max(found, key=text.rfind)
        return ""

    def _next(self, marker: str, *, has_tools: bool) -> tuple[Step, int]:
        with self._lock:
            if not marker or not has_tools:
                return say("ok"), -1
            n = self._played.get(marker, 0)
            script = self.scripts[marker]
            self._played[marker] = n + 1
            return (script[n] if n < len(script) else say("(script over)")), n

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        raise NotImplementedError

    def start(self) -> _Base:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, ctype: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    models = {"object": "list", "data": [{"id": "gpt-fake", "object": "model"}]}
                    self._send(200, "application/json", json.dumps(models).encode())
                    return
                self._send(404, "application/json", b"{}")

            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(size) or b"{}")
                except ValueError:
                    body = {}
                status, ctype, data = api.answer(self.path, body)
                self._send(status, ctype, data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @contextmanager
    def serving(self, record: Path | None = None) -> Iterator[Self]:
        """Serve for the block; then stop and, when `record` is given, write every request
        body there (what to read when an e2e run goes wrong)."""
        self.start()
        try:
            yield self
        finally:
            self.stop()
            if record is not None:
                record.write_text(json.dumps([r.body for r in self.requests], indent=1))


class FakeGeminiAPI(_Base):
    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        if ":countTokens" in path:
            return 200, "application/json", b'{"totalTokens": 10}'
        contents = body.get("contents") or []
        marker = self._marker([json.dumps(c) for c in contents if c.get("role") == "user"])
        step, n = self._next(marker, has_tools=bool(body.get("tools")))
        self.requests.append(Request(path, body, marker, n))
        if step.tool:
            parts: list[dict[str, Any]] = [{"functionCall": {"name": step.tool, "args": step.args}}]
        else:
            parts = [{"text": step.text}]
        chunk = {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 5,
                "totalTokenCount": 15,
            },
            "modelVersion": "gemini-2.5-flash",
        }
        if ":streamGenerateContent" in path:
            return 200, "text/event-stream", f"data: {json.dumps(chunk)}\r\n\r\n".encode()
        return 200, "application/json", json.dumps(chunk).encode()


class FakeChatAPI(_Base):
    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
        messages = body.get("messages") or []
        # Copilot sends the index as a user message of its own before the prompt: the user
        # messages read as one text, whose last-named marker is this conversation's.
        marker = self._marker(
            ["\n".join(json.dumps(m.get("content")) for m in messages if m.get("role") == "user")]
        )
        step, n = self._next(marker, has_tools=bool(body.get("tools")))
        self.requests.append(Request(path, body, marker, n))
        ident = f"chatcmpl-fake-{len(self.requests)}"
        if step.tool:
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "index": 0,
                        "id": f"call_fake_{len(self.requests)}",
                        "type": "function",
                        "function": {"name": step.tool, "arguments": json.dumps(step.args)},
                    }
                ],
            }
            finish = "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": step.text}, "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        base = {"id": ident, "created": 1, "model": body.get("model", "gpt-fake")}
        if body.get("stream"):
            chunks = [
                {**base, "object": "chat.completion.chunk",
                 "choices": [{"index": 0, "delta": message, "finish_reason": None}]},
                {**base, "object": "chat.completion.chunk",
                 "choices": [{"index": 0, "delta": {}, "finish_reason": finish}], "usage": usage},
            ]  # fmt: skip
            data = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks)
            return 200, "text/event-stream", data + b"data: [DONE]\n\n"
        full = {**base, "object": "chat.completion", "usage": usage,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}]}  # fmt: skip
        return 200, "application/json", json.dumps(full).encode()


def tool_messages(body: dict[str, Any]) -> str:
    """The tool results a Chat Completions request sends back to the model, as JSON text."""
    return json.dumps([m for m in body.get("messages", []) if m.get("role") == "tool"])
