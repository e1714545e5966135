"""A stand-in for the worker's Unix socket: the hook tests check what a hook process sends
and that it exits cleanly, without a worker behind it."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

EMPTY_OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"


@contextmanager
def answering_once(path: Path, reply: bytes = EMPTY_OK) -> Iterator[list[bytes]]:
    """A socket at `path` that accepts one connection, keeps what it received and answers
    `reply`; the list yielded holds the request once the block has ended."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    requests: list[bytes] = []

    def answer() -> None:
        conn, _ = server.accept()
        with conn:
            requests.append(conn.recv(65536))
            conn.sendall(reply)

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        yield requests
    finally:
        thread.join(5)
        server.close()
