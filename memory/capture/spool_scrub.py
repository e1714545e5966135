"""Secrets and `<private>` passages never reach the spool.

The hook client spools the raw stdin of an event when the worker cannot take it; the worker
sanitizes when it ingests, but until then the file would sit on disk with every API key a
tool printed. So the spooled copy is scrubbed first, with the same rules the capture
services use (memory.capture.privacy, detect-secrets' plugins included), on the slow path
only (the worker is down anyway):

- each `<private>…</private>` passage is emptied but its tags are kept, so the worker still
  sees a prompt that was entirely private and drops that turn's tool uses and summary;
- every string is redacted (`[REDACTED:<kind>]`), and string values under secret-sounding
  keys are replaced whatever they look like;
- a string much longer than CLAUDE_MEM_FIELD_CAP is cut as the worker would cut it anyway
  (redacting megabytes only to throw them away is slow).
"""

from __future__ import annotations

import json
import re
from typing import Any

from memory import config
from memory.capture import privacy

# Case-insensitive like memory.capture.privacy: `<PRIVATE>` is as private as `<private>`.
_PRIVATE_RE = re.compile(r"<private(?:\s[^>]*)?>.*?</private\s*>", re.DOTALL | re.IGNORECASE)
_UNCLOSED_RE = re.compile(r"<private(?:\s[^>]*)?>.*\Z", re.DOTALL | re.IGNORECASE)


def _text(value: str, sanitizer: privacy.Sanitizer) -> str:
    if sanitizer.cap > 0 and len(value) > sanitizer.cap + 4096:
        return sanitizer.text(value)
    if "<private" in value.lower():
        value = _PRIVATE_RE.sub("<private></private>", value)
        # An unclosed <private> hides everything after it (as memory.capture.privacy does); only the
        # text after the last emptied passage can hold one.
        cut = value.rfind("<private></private>")
        head, tail = (value[: cut + 19], value[cut + 19 :]) if cut >= 0 else ("", value)
        value = head + _UNCLOSED_RE.sub("<private></private>", tail)
    return privacy.redact_text(value) if sanitizer.redact else value


def _walk(value: Any, sanitizer: privacy.Sanitizer, key: str = "") -> Any:
    if isinstance(value, str):
        if (
            sanitizer.redact
            and key
            and privacy._SECRET_KEY_RE.search(key)
            and len(value) >= 4
            and not value.startswith("[REDACTED")
        ):
            return f"[REDACTED:{privacy._slug(key)}]"
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
    sanitizer = privacy.Sanitizer(settings=config.load())
    try:
        cleaned = _walk(data, sanitizer)
    except RecursionError:
        return None
    return json.dumps(cleaned, ensure_ascii=False).encode("utf-8", "replace")
