"""The encoder's own process (numpy, ONNX Runtime and the model; no Django), run as
`python -m memory.retrieval.embeddings.encoder_child [MODEL]`.

The worker runs its sentence encoder here rather than in its own heap (`encoder.py` is the
worker's side): ONNX Runtime's import (21 MB), the session and tokenizer (51 MB) and the
numpy this process uses all live and die with this process, so ending it after an idle
period gives every byte back, which unloading the model inside the worker could not (an
extension module stays imported, and a fragmented heap keeps its pages).

No Django here: the standard library, numpy, ONNX Runtime and `transformer.py`.

The protocol, over stdin and stdout, every message a 4-byte big-endian length and a body:
- on start, one JSON object: `{"version": ..., "dim": ..., "warning": ...}` of the loaded
  model (`warning`: why a configured local model was not it), or `{"error": ...}` (and the
  process exits);
- then per request, a JSON list of texts in, and back `len(texts) * dim` float32 values
  (native order: both ends are the same machine) of their unit vectors.
End of input (the worker closed the pipe, or died) ends the process.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO

HEADER = struct.Struct(">I")
# How often the orphan watch looks whether the worker is still this process's parent.
PARENT_CHECK_SECONDS = 1.0


def read_message(stream: BinaryIO) -> bytes | None:
    """One length-prefixed message, or None at end of input."""
    head = stream.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    (size,) = HEADER.unpack(head)
    body = stream.read(size)
    return body if len(body) == size else None


def write_message(stream: BinaryIO, body: bytes) -> None:
    stream.write(HEADER.pack(len(body)) + body)
    stream.flush()


def _exit_when_orphaned(parent: int) -> None:
    """End this process once the worker is gone, even while an inference runs: end of input
    comes only when the main loop next reads, and a killed worker's pipe may be held open
    by nothing else. (PR_SET_PDEATHSIG is not used: it fires when the *thread* that spawned
    the child ends, and the worker spawns it from whichever thread first needs a vector.)"""
    while True:
        time.sleep(PARENT_CHECK_SECONDS)
        if os.getppid() != parent:
            os._exit(0)


def _load(name: str) -> tuple[Any, str]:
    """(model, warning): the model `name` names (a local folder), or the bundled one, with
    why when it had to be the bundled one; `model.py`'s rules."""
    # after the orphan watch has started: these imports take most of a second
    from memory.retrieval.embeddings import transformer

    if name:
        folder = Path(name).expanduser()
        try:
            return transformer.load_local(folder), ""
        except Exception as exc:  # noqa: BLE001 - any unreadable model means: use the default
            why = (
                f"CLAUDE_MEM_EMBEDDINGS_MODEL={name} cannot be loaded ({exc}); using the "
                f"bundled {transformer.NAME}"
            )
            return transformer.load(), why
    return transformer.load(), ""


def serve(name: str, requests: BinaryIO, replies: BinaryIO) -> None:
    try:
        model, warning = _load(name)
    except Exception as exc:  # noqa: BLE001 - the worker reads why and falls back to keyword
        write_message(replies, json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
        return
    hello = {"version": model.version, "dim": model.dim, "warning": warning}
    write_message(replies, json.dumps(hello).encode())
    while (body := read_message(requests)) is not None:
        texts = json.loads(body)
        vectors = model.embed(texts)
        write_message(replies, vectors.astype("float32").tobytes())


def main() -> None:
    # Ctrl-C at a foreground `cmem serve` is the worker's to handle: the child ends when
    # the worker closes the pipe.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(
        target=_exit_when_orphaned, args=(os.getppid(),), name="orphan-watch", daemon=True
    ).start()
    # The replies get a descriptor of their own and descriptor 1 becomes stderr, so a stray
    # print from a library can never corrupt the protocol.
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    name = sys.argv[1] if len(sys.argv) > 1 else ""
    serve(name, sys.stdin.buffer, replies)


if __name__ == "__main__":
    main()
