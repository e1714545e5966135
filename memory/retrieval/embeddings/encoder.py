"""The worker's side of the encoder process (`encoder_child.py`): texts out, vectors back.

`model.get_model()` answers a `ChildEncoder`: the sentence encoder runs in a child process
spawned on first use, so the worker itself never imports ONNX Runtime, and ending the child
after `CLAUDE_MEM_EMBEDDINGS_IDLE_SECONDS` gives back everything the model cost.

- One request at a time over the pipe (a lock), at most `PIECE` texts each: a search's one
  text waits behind at most one piece of a background batch, never the whole batch.
- Every wait is bounded: `START_SECONDS` for the child to load its model, `REPLY_SECONDS`
  per piece. A child that does not answer in time is killed; one that died (crashed,
  killed) is started again on the next use, or at once when it died under a request
  (which is then asked once more).
- `embed` is what a search calls: on failure it logs why, turns search by meaning off for
  `RETRY_SECONDS` with the reason (`embeddings.unavailable_note()`, which the search's
  `mode_note` reads; the searches meanwhile answer by keyword at once), and answers zero
  vectors, which search treats as "nothing to compare": this search's answer is the
  keyword search's. `encode` raises `EncoderError` instead: what stores vectors must never
  store a zero vector for a row that has text.
- The child ends when the worker closes its pipe, and on its own once the worker is gone
  (it watches its parent): a worker killed with -9 leaves no encoder behind.
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import memory
from memory.retrieval import embeddings
from memory.retrieval.embeddings.encoder_child import HEADER

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

MODULE = "memory.retrieval.embeddings.encoder_child"
# Texts per request: one text of 256 tokens takes ~20 ms, so a search queued behind a
# background batch waits a fraction of a second at most.
PIECE = 8
# The child's start (Python, numpy, ONNX Runtime, the model: ~1 s here, much longer on a
# loaded machine) and one piece's answer.
START_SECONDS = 60.0
REPLY_SECONDS = 20.0
# After a failure searches answer by keyword this long, each at once, before one tries again
# (a hung encoder would otherwise cost every search the whole timeout).
RETRY_SECONDS = 15.0
UNAVAILABLE_KEY = "encoder"
# The width a zero vector gets when the child never said its own (the bundled model's).
DEFAULT_DIM = 384


class EncoderError(RuntimeError):
    """The encoder process could not answer (did not start, died, or timed out)."""


class EncoderDied(EncoderError):
    """The encoder process ended while asked (it crashed, or was killed)."""


# Calls in flight and when the last ended (monotonic), over every encoder of this process:
# the idle unload (`model.unload_if_idle`) never ends a child that is embedding.
_use_lock = threading.Lock()
_in_flight = 0
_last_used = 0.0


def in_flight() -> int:
    return _in_flight


def last_used() -> float:
    return _last_used


class ChildEncoder:
    """The sentence encoder `name` names (a local folder, or "" for the bundled model),
    run in a child process; `version` and `dim` as the child reports them."""

    def __init__(self, name: str, version: str, on_start: Callable[[], None] | None = None) -> None:
        self.name = name
        self._on_start = on_start
        self._version = version  # what the model's files say, until the child says
        self._dim: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    @property
    def version(self) -> str:
        return self._version

    @property
    def dim(self) -> int:
        if self._dim is None:
            with self._locked(START_SECONDS):
                self._ensure_started()
        assert self._dim is not None
        return self._dim

    def pid(self) -> int | None:
        """The child's process id while one runs (tests, the bench)."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def embed(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32 unit vectors, as `TransformerModel.embed`; when the
        encoder cannot answer, zero vectors (see the module docstring)."""
        try:
            vectors = self.encode(texts)
        except EncoderError as exc:
            log.warning("the encoder process could not answer: %s", exc)
            embeddings.set_unavailable(
                UNAVAILABLE_KEY,
                f"the embedding model's process did not answer ({exc}), so search answers by "
                f"keyword; it is started again by the first search after {RETRY_SECONDS:.0f} s",
                RETRY_SECONDS,
            )
            # optional dependency (numpy: the embeddings extra)
            import numpy as np

            return np.zeros((len(texts), self._dim or DEFAULT_DIM), dtype=np.float32)
        embeddings.clear_unavailable(UNAVAILABLE_KEY)
        return vectors

    def encode(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32 unit vectors; raises `EncoderError`."""
        # optional dependency (numpy: the embeddings extra)
        import numpy as np

        global _in_flight, _last_used
        with _use_lock:
            _in_flight += 1
        try:
            parts = [self._request(texts[at : at + PIECE]) for at in range(0, len(texts), PIECE)]
        finally:
            with _use_lock:
                _in_flight -= 1
                _last_used = time.monotonic()
        if not parts:
            return np.zeros((0, self._dim or DEFAULT_DIM), dtype=np.float32)
        return np.concatenate(parts)

    def close(self) -> None:
        """End the child (the idle unload): its pipe closes, it exits, every byte returns."""
        with self._lock:
            self._stop(kill=False)

    # -- the pipe ---------------------------------------------------------------------------

    def _locked(self, seconds: float) -> _Held:
        return _Held(self._lock, seconds)

    def _request(self, texts: list[str]) -> np.ndarray:
        """One piece's vectors; a child that died under it (crashed, killed) is started
        again and asked once more."""
        try:
            return self._ask(texts)
        except EncoderDied as exc:
            log.warning("the encoder process ended during a request (%s); starting it again", exc)
            return self._ask(texts)

    def _ask(self, texts: list[str]) -> np.ndarray:
        # optional dependency (numpy: the embeddings extra)
        import numpy as np

        with self._locked(START_SECONDS + REPLY_SECONDS):
            self._ensure_started()
            assert self._proc is not None and self._dim is not None
            deadline = time.monotonic() + REPLY_SECONDS
            try:
                body = json.dumps(texts).encode()
                self._write(HEADER.pack(len(body)) + body, deadline)
                (size,) = HEADER.unpack(self._read(HEADER.size, deadline))
                data = self._read(size, deadline)
            except EncoderError:
                self._stop(kill=True)
                raise
            if size != len(texts) * self._dim * 4:
                self._stop(kill=True)
                raise EncoderError(f"the encoder answered {size} bytes for {len(texts)} text(s)")
            return np.frombuffer(data, dtype=np.float32).reshape(len(texts), self._dim).copy()

    def _ensure_started(self) -> None:
        """Under the lock: a live child, started (and its handshake read) when there is none."""
        if self._proc is not None and self._proc.poll() is None:
            return
        if self._proc is not None:
            log.warning(
                "the encoder process had ended (exit %s); starting it again", self._proc.returncode
            )
            self._stop(kill=True)
        env = dict(os.environ)
        # The child imports cmem's package from where this process found it.
        root = str(Path(memory.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        self._proc = subprocess.Popen(
            [sys.executable, "-m", MODULE, self.name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=0,
            env=env,
        )
        assert self._proc.stdin is not None
        os.set_blocking(self._proc.stdin.fileno(), False)
        deadline = time.monotonic() + START_SECONDS
        try:
            (size,) = HEADER.unpack(self._read(HEADER.size, deadline))
            hello = json.loads(self._read(size, deadline))
        except (EncoderError, ValueError) as exc:
            self._stop(kill=True)
            raise EncoderError(f"the encoder process did not start: {exc}") from exc
        if "error" in hello:
            self._stop(kill=True)
            raise EncoderError(f"the encoder process could not load the model: {hello['error']}")
        self._version, self._dim = str(hello["version"]), int(hello["dim"])
        if hello.get("warning"):
            log.warning("%s", hello["warning"])
        log.info("encoder process %d started (%s)", self._proc.pid, self._version)
        if self._on_start is not None:
            self._on_start()

    def _write(self, data: bytes, deadline: float) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        fd = self._proc.stdin.fileno()
        view = memoryview(data)
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise EncoderError(f"no answer within {REPLY_SECONDS:.0f} s")
            _, ready, _ = select.select([], [fd], [], remaining)
            if not ready:
                continue
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                continue
            except OSError as exc:  # BrokenPipeError: the child is gone
                raise EncoderDied(f"the encoder process ended ({exc})") from exc

    def _read(self, size: int, deadline: float) -> bytes:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        out = bytearray()
        while len(out) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise EncoderError(f"no answer within {REPLY_SECONDS:.0f} s")
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, size - len(out))
            if not chunk:
                raise EncoderDied("the encoder process ended")
            out += chunk
        return bytes(out)

    def _stop(self, *, kill: bool) -> None:
        """Under the lock: end the child, closing its pipe first (it exits at end of input);
        `kill` when it may not be listening (a timeout, a bad answer)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()
        if kill:
            proc.kill()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


class _Held:
    """The encoder's lock, waited for at most `seconds` (then `EncoderError`)."""

    def __init__(self, lock: threading.Lock, seconds: float) -> None:
        self.lock, self.seconds = lock, seconds

    def __enter__(self) -> None:
        if not self.lock.acquire(timeout=self.seconds):
            raise EncoderError(f"the encoder was busy for {self.seconds:.0f} s")

    def __exit__(self, *exc: object) -> None:
        self.lock.release()
