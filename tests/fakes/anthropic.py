"""A fake Anthropic Messages API on 127.0.0.1, scripted per test.

The real `anthropic` SDK (or a real agent CLI) talks to it over HTTP through
`CLAUDE_MEM_ANTHROPIC_BASE_URL`. It answers `POST /v1/messages`, streaming (SSE) and not, from a queue
of scripted replies (text, raw content blocks, error statuses, delays, or a function of the
request), records every request body, and reports usage computed honestly from the request:
input tokens = characters / 4; the prefix up to the last `cache_control` breakpoint is a
cache write the first time and a cache read on a repeat within 5 minutes, as long as it
reaches the model's minimum cacheable length (4,096 tokens for Haiku 4.5, 1,024 otherwise).

    with FakeAnthropic() as api:
        api.script(Reply(text="<observation>…</observation>"), Reply(status=500))
        monkeypatch.setenv("CLAUDE_MEM_ANTHROPIC_BASE_URL", api.url)

It lives in the package, not under tests/, because `python -m tests.bench compress` replays a session
against it and must run outside a checkout; the tests import it from here too.

Run alone (for manual or end-to-end use): `python -m tests.fakes.anthropic --port 8123`.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CACHE_TTL_SECONDS = 300.0

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass
class Reply:
    """One scripted answer. `fn` builds the reply from the request body instead."""

    text: str = ""
    status: int = 200
    delay: float = 0.0  # seconds before the first byte: past the client's timeout = a timeout
    content: list[dict[str, Any]] | None = None  # raw blocks (text / tool_use), for agent CLIs
    stop_reason: str = "end_turn"
    headers: dict[str, str] = field(default_factory=dict)
    error_message: str = "scripted error"
    fn: Callable[[dict[str, Any]], Reply] | None = None

    def blocks(self) -> list[dict[str, Any]]:
        if self.content is not None:
            return self.content
        return [{"type": "text", "text": self.text}] if self.text else []


@dataclass
class Recorded:
    body: dict[str, Any]
    headers: dict[str, str]
    usage: dict[str, int] = field(default_factory=dict)
    status: int = 200


def min_cache_tokens(model: str) -> int:
    model = model.lower()
    if "haiku-4-5" in model or "opus-4-5" in model or "opus-4-6" in model:
        return 4096
    if "haiku" in model:
        return 2048
    return 1024


def _chars(value: Any) -> int:
    """Characters of the model-visible text in a system/messages/tools structure."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_chars(v) for v in value)
    if isinstance(value, dict):
        if value.get("type") == "text":
            return len(value.get("text", ""))
        if value.get("type") == "tool_use":
            return len(json.dumps(value.get("input", {}))) + len(value.get("name", ""))
        if value.get("type") == "tool_result":
            return _chars(value.get("content", ""))
        if "content" in value:
            return _chars(value["content"])
        if "input_schema" in value:  # a tool definition
            return len(json.dumps(value))
        return 0
    return 0


def _blocks_in_order(body: dict[str, Any]) -> list[dict[str, Any]]:
    """tools, then system, then message content: the order the API caches prefixes in."""
    blocks: list[dict[str, Any]] = list(body.get("tools") or [])
    system = body.get("system")
    if isinstance(system, str):
        blocks.append({"type": "text", "text": system})
    elif isinstance(system, list):
        blocks.extend(system)
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            blocks.append({"type": "text", "text": content})
        elif isinstance(content, list):
            blocks.extend(content)
    return blocks


class FakeAnthropic:
    def __init__(
        self, *, default: Reply | None = None, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        self.default = default if default is not None else Reply(text="")
        self.queue: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self._cache: dict[str, float] = {}
        self._lock = threading.Lock()
        self._released = threading.Event()  # set on stop(): sleeping handlers return at once
        self.server = ThreadingHTTPServer((host, port), _handler_for(self))
        self.server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else host
        return f"http://{host}:{port}"

    def start(self) -> FakeAnthropic:
        self._thread = threading.Thread(
            target=self.server.serve_forever, name="fake-anthropic", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FakeAnthropic:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- scripting -------------------------------------------------------------------------
    def script(self, *replies: Reply) -> None:
        with self._lock:
            self.queue.extend(replies)

    def next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            reply = self.queue.popleft() if self.queue else self.default
        while reply.fn is not None:
            reply = reply.fn(body)
        return reply

    def bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests]

    def wait_for_requests(self, count: int, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.requests) >= count:
                return True
            time.sleep(0.02)
        return False

    # -- usage -----------------------------------------------------------------------------
    def usage_for(self, body: dict[str, Any], output_text_chars: int) -> dict[str, int]:
        blocks = _blocks_in_order(body)
        total = sum(_chars(b) for b in blocks)
        last_breakpoint = max(
            (i for i, b in enumerate(blocks) if b.get("cache_control")), default=-1
        )
        prefix_chars = sum(_chars(b) for b in blocks[: last_breakpoint + 1])
        prefix_tokens = prefix_chars // 4
        cache_read = cache_write = 0
        if last_breakpoint >= 0 and prefix_tokens >= min_cache_tokens(str(body.get("model", ""))):
            key = hashlib.sha256(
                json.dumps(
                    [body.get("model"), blocks[: last_breakpoint + 1]], sort_keys=True
                ).encode()
            ).hexdigest()
            now = time.monotonic()
            with self._lock:
                seen = self._cache.get(key)
                self._cache[key] = now
            if seen is not None and now - seen < CACHE_TTL_SECONDS:
                cache_read = prefix_tokens
            else:
                cache_write = prefix_tokens
        return {
            "input_tokens": max(0, total // 4 - cache_read - cache_write),
            "output_tokens": max(1, output_text_chars // 4),
            "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_write,
        }


def _handler_for(api: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            path = self.path.split("?", 1)[0]
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                return self._json(
                    400,
                    {
                        "type": "error",
                        "error": {"type": "invalid_request_error", "message": "bad json"},
                    },
                )
            if path.endswith("/v1/messages/count_tokens"):
                return self._json(
                    200, {"input_tokens": sum(_chars(b) for b in _blocks_in_order(body)) // 4}
                )
            if not path.endswith("/v1/messages"):
                return self._json(
                    404, {"type": "error", "error": {"type": "not_found_error", "message": path}}
                )
            headers = {k.lower(): v for k, v in self.headers.items()}
            record = Recorded(body=body, headers=headers)
            with api._lock:
                api.requests.append(record)
            reply = api.next_reply(body)
            if reply.delay and api._released.wait(reply.delay):
                return  # the server is stopping
            record.status = reply.status
            if reply.status != 200:
                error = {
                    "type": ERROR_TYPES.get(reply.status, "api_error"),
                    "message": reply.error_message,
                }
                return self._json(reply.status, {"type": "error", "error": error}, reply.headers)
            blocks = reply.blocks()
            out_chars = sum(_chars(b) for b in blocks)
            usage = api.usage_for(body, out_chars)
            record.usage = usage
            message = {
                "id": f"msg_fake_{uuid.uuid4().hex[:20]}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", "claude-fake"),
                "content": blocks,
                "stop_reason": reply.stop_reason,
                "stop_sequence": None,
                "usage": usage,
            }
            if body.get("stream"):
                return self._stream(message, reply.headers)
            return self._json(200, message, reply.headers)

        def _json(
            self, status: int, data: dict[str, Any], headers: dict[str, str] | None = None
        ) -> None:
            payload = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.send_header("request-id", f"req_fake_{uuid.uuid4().hex[:12]}")
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)

        def _stream(self, message: dict[str, Any], headers: dict[str, str]) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.close_connection = True
            usage = message["usage"]
            start = dict(message, content=[], stop_reason=None, usage=dict(usage, output_tokens=1))
            self._event("message_start", {"type": "message_start", "message": start})
            self._event("ping", {"type": "ping"})
            for index, block in enumerate(message["content"]):
                if block["type"] == "tool_use":
                    opening = dict(block, input={})
                    self._event(
                        "content_block_start",
                        {"type": "content_block_start", "index": index, "content_block": opening},
                    )
                    partial = json.dumps(block.get("input", {}))
                    delta = {"type": "input_json_delta", "partial_json": partial}
                    self._event(
                        "content_block_delta",
                        {"type": "content_block_delta", "index": index, "delta": delta},
                    )
                else:
                    opening = {"type": "text", "text": ""}
                    self._event(
                        "content_block_start",
                        {"type": "content_block_start", "index": index, "content_block": opening},
                    )
                    text = block.get("text", "")
                    for pos in range(0, len(text), 200):
                        delta = {"type": "text_delta", "text": text[pos : pos + 200]}
                        self._event(
                            "content_block_delta",
                            {"type": "content_block_delta", "index": index, "delta": delta},
                        )
                self._event("content_block_stop", {"type": "content_block_stop", "index": index})
            self._event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": usage["output_tokens"]},
                },
            )
            self._event("message_stop", {"type": "message_stop"})

        def _event(self, name: str, data: dict[str, Any]) -> None:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve the fake Anthropic Messages API.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--text", default="", help="What every request is answered with.")
    args = parser.parse_args()
    api = FakeAnthropic(default=Reply(text=args.text), port=args.port)
    print(api.url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        api.server.serve_forever()


if __name__ == "__main__":
    main()
