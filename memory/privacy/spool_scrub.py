"""Secrets and `<private>` passages never reach the spool.

The hook client spools the raw stdin of an event when the worker cannot take it; the worker
sanitizes when it ingests, but until then the file would sit on disk with every API key a
tool printed. So the spooled copy is scrubbed first, with the same rules the capture
services use (memory.privacy, detect-secrets' plugins included), on the slow path
only (the worker is down anyway):

- each `<private>…</private>` passage is emptied but its tags are kept, so the worker still
  sees a prompt that was entirely private and drops that turn's tool uses and summary;
- every string is redacted (`[REDACTED:<kind>]`), and string values under secret-sounding
  keys are replaced whatever they look like;
- a string much longer than CLAUDE_MEM_FIELD_CAP is cut as the worker would cut it anyway
  (redacting megabytes only to throw them away is slow).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from typing import Any

from memory import config
from memory.privacy import redaction

# Case-insensitive like memory.privacy: `<PRIVATE>` is as private as `<private>`.
_PRIVATE_RE = re.compile(r"<private(?:\s[^>]*)?>.*?</private\s*>", re.DOTALL | re.IGNORECASE)
_UNCLOSED_RE = re.compile(r"<private(?:\s[^>]*)?>.*\Z", re.DOTALL | re.IGNORECASE)
# Text of handed-over files redacted per spooled event. The redactor runs at well under
# 1 MB/s on a loaded laptop, and this is the Stop hook's own time: a text file past this
# budget is not kept in the spool (a local worker copies it from disk if it is still there).
SPOOL_TEXT_MAX_BYTES = 1024 * 1024


def _text(value: str, sanitizer: redaction.Sanitizer) -> str:
    if sanitizer.cap > 0 and len(value) > sanitizer.cap + 4096:
        return sanitizer.text(value)
    if "<private" in value.lower():
        value = _PRIVATE_RE.sub("<private></private>", value)
        # An unclosed <private> hides everything after it (as memory.privacy does); only the
        # text after the last emptied passage can hold one.
        cut = value.rfind("<private></private>")
        head, tail = (value[: cut + 19], value[cut + 19 :]) if cut >= 0 else ("", value)
        value = head + _UNCLOSED_RE.sub("<private></private>", tail)
    return redaction.redact_text(value) if sanitizer.redact else value


def _walk(value: Any, sanitizer: redaction.Sanitizer, key: str = "") -> Any:
    if isinstance(value, str):
        if (
            sanitizer.redact
            and key
            and redaction._SECRET_KEY_RE.search(key)
            and len(value) >= 4
            and not value.startswith("[REDACTED")
        ):
            return f"[REDACTED:{redaction._slug(key)}]"
        return _text(value, sanitizer)
    if isinstance(value, dict):
        return {str(k): _walk(v, sanitizer, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, sanitizer, key) for v in value]
    return value


def spool_scrub(body: bytes) -> bytes | None:
    """The body safe to keep on disk, or None when it is not a JSON object (then it is not
    kept: the worker would refuse it anyway)."""
    try:
        data = json.loads(body.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    # The worker's rules exactly (detect-secrets' plugins come from a snapshot, so there is
    # no import to pay here).
    sanitizer = redaction.Sanitizer(settings=config.load())
    # Handed-over file bytes (memory.capture.handover) are base64: the walk would take them
    # for a high-entropy secret. They are scrubbed as the files they are instead.
    handover = data.pop("cmem_handover", None)
    try:
        cleaned = _walk(data, sanitizer)
    except RecursionError:
        return None
    if isinstance(handover, dict):
        cleaned["cmem_handover"] = _handover_scrub(handover)
    return json.dumps(cleaned, ensure_ascii=False).encode("utf-8", "replace")


def _handover_scrub(handover: dict[str, Any]) -> dict[str, Any]:
    """Each handed-over file as the worker would store it: a text file (UTF-8 without NUL)
    redacted by the one redactor, a binary kept as is; paths and reasons redacted, an
    attachment's title and note scrubbed like any other text."""
    raw_files = handover.get("files")
    files: list[Any] = raw_files if isinstance(raw_files, list) else []
    sanitizer = redaction.Sanitizer(settings=config.load())
    out: list[dict[str, Any]] = []
    text_left = SPOOL_TEXT_MAX_BYTES
    for entry in files:
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            continue
        kept: dict[str, Any] = {"path": redaction.redact_text(entry["path"])}
        for key in ("refused", "skipped"):
            if isinstance(entry.get(key), str):
                kept[key] = redaction.redact_text(entry[key])
        if entry.get("attached") is True:
            kept["attached"] = True
            for key in ("title", "note"):
                if isinstance(entry.get(key), str):
                    kept[key] = _text(entry[key], sanitizer)
        data = entry.get("data")
        if isinstance(data, str):
            try:
                raw = base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError):
                kept.setdefault("skipped", "unreadable bytes")
                out.append(kept)
                continue
            text = _text_of(raw)
            if text is not None:
                if len(raw) > text_left:
                    kept["skipped"] = "text too large to redact on the hook's path"
                    out.append(kept)
                    continue
                text_left -= len(raw)
                raw = redaction.redact_text(text).encode("utf-8")
            kept.update(
                size=len(raw),
                sha256=hashlib.sha256(raw).hexdigest(),
                data=base64.b64encode(raw).decode("ascii"),
            )
        out.append(kept)
    return {"kind": str(handover.get("kind") or ""), "files": out}


def _text_of(raw: bytes) -> str | None:
    """The file as text, as the worker's copy decides it (UTF-8 without NUL), else None."""
    if b"\x00" in raw:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
