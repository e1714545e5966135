"""The agent's main model, read from the tail of its transcript (Claude Code's JSONL: each
assistant line carries `message.model`), so the ledger can price a session's tokens.

Only a local worker reads it: the path comes from the owner's own hook over the owner-only
socket, and a shared worker never opens a path a client names. The read is
bounded (the last TAIL_BYTES), refuses links and anything but a regular file, and never
raises: an unknown model just leaves the session at the documented default.
"""

from __future__ import annotations

import json
import os
import re
import stat

TAIL_BYTES = 256 * 1024
# What a model name may look like ("claude-opus-5-5", "claude-opus-5-5[1m]",
# "anthropic/claude-sonnet-5-5", "us.anthropic.claude-haiku-5-5-v1:0"): a remote client's
# claim is priced only when it is one.
_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/\[\]-]{0,119}")
# Claude Code writes this for messages it made up itself (an interrupted turn, an error).
SYNTHETIC = "<synthetic>"


def transcript_model(path: str) -> str:
    """The newest assistant message's model in the transcript at `path`, or ""."""
    if not path or not path.endswith(".jsonl"):
        return ""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return ""
        start = max(0, info.st_size - TAIL_BYTES)
        os.lseek(fd, start, os.SEEK_SET)
        data = os.read(fd, TAIL_BYTES)
    except OSError:
        return ""
    finally:
        os.close(fd)
    lines = data.split(b"\n")
    if start:
        lines = lines[1:]  # the first line is cut
    for line in reversed(lines):
        if b'"assistant"' not in line or b'"model"' not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        message = entry.get("message") if isinstance(entry, dict) else None
        model = message.get("model") if isinstance(message, dict) else None
        if entry.get("type") == "assistant" and isinstance(model, str) and model != SYNTHETIC:
            return model.strip()[:120]
    return ""


def model_name_clean(value: object) -> str:
    """`value` when it looks like a model name, else "": what a remote hook client says its
    session's model is (team mode) is only ever a price lookup key, never shown as markup."""
    if isinstance(value, str) and _MODEL_NAME.fullmatch(value.strip()):
        return value.strip()
    return ""
