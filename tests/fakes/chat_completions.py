"""A fake OpenAI Chat Completions server on 127.0.0.1, scripted per test.

The real `openai` SDK talks to it through CLAUDE_MEM_OPENAI_BASE_URL (or the OpenRouter /
Gemini base URL settings). It answers `POST /v1/chat/completions`, streaming (SSE chunks
ending in `data: [DONE]`, usage in the last chunk when asked) and not, from a queue of
scripted replies: text, an error status with headers (429 + retry-after), or a body that
is not JSON. Every request body is recorded.

    with FakeChatCompletions() as api:
        api.script(ChatReply(status=429, headers={"retry-after": "0"}), ChatReply(text="…"))
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class ChatReply:
    text: str = ""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # sent as is (a malformed body)
    finish_reason: str = "stop"
    cached_tokens: int = 0
    cost: float | None = None  # OpenRouter's usage.cost


@dataclass
class FakeChatCompletions:
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    queue: deque[ChatReply] = field(default_factory=deque)
    default: ChatReply = field(default_factory=ChatReply)
    server: ThreadingHTTPServer | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def script(self, *replies: ChatReply) -> None:
        self.queue.extend(replies)

    def _next(self) -> ChatReply:
        with self.lock:
            return self.queue.popleft() if self.queue else self.default

    def __enter__(self) -> FakeChatCompletions:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                with api.lock:
                    api.requests.append(body)
                    api.headers.append({k.lower(): v for k, v in self.headers.items()})
                reply = api._next()
                if reply.status != 200:
                    error = {"error": {"message": f"scripted {reply.status}", "type": "error"}}
                    self._send(reply.status, json.dumps(error).encode(), reply.headers)
                    return
                if reply.raw is not None:
                    self._send(200, reply.raw, {"Content-Type": "application/json"})
                    return
                prompt = sum(len(str(m.get("content", ""))) for m in body["messages"]) // 4
                usage: dict[str, Any] = {
                    "prompt_tokens": prompt,
                    "completion_tokens": max(1, len(reply.text) // 4),
                    "total_tokens": prompt + max(1, len(reply.text) // 4),
                    "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
                }
                if reply.cost is not None:
                    usage["cost"] = reply.cost
                model = body.get("model", "fake-model")
                if body.get("stream"):
                    self._stream(reply, model, usage, bool(body.get("stream_options")))
                    return
                data = {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": 0,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": reply.text},
                            "finish_reason": reply.finish_reason,
                        }
                    ],
                    "usage": usage,
                }
                self._send(200, json.dumps(data).encode(), {"Content-Type": "application/json"})

            def _stream(
                self, reply: ChatReply, model: str, usage: dict[str, Any], with_usage: bool
            ) -> None:
                def chunk(delta: dict[str, Any], finish: str | None, **extra: Any) -> bytes:
                    data = {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion.chunk",
                        "created": 0,
                        "model": model,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                        **extra,
                    }
                    return f"data: {json.dumps(data)}\n\n".encode()

                pieces = [reply.text[i : i + 40] for i in range(0, len(reply.text), 40)] or [""]
                out = chunk({"role": "assistant", "content": ""}, None)
                out += b"".join(chunk({"content": p}, None) for p in pieces)
                out += chunk({}, reply.finish_reason)
                if with_usage:
                    data = {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion.chunk",
                        "created": 0,
                        "model": model,
                        "choices": [],
                        "usage": usage,
                    }
                    out += f"data: {json.dumps(data)}\n\n".encode()
                out += b"data: [DONE]\n\n"
                self._send(200, out, {"Content-Type": "text/event-stream"})

            def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                headers = {"Content-Type": "application/json", **headers}
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
