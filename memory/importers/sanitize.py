"""Imported prompts and tool uses made into exactly what live capture stores.

The same privacy pass (memory.privacy: tags, secrets, caps) and the same Event payload
shape as `capture.observation_record`, so the compressor cannot tell a backfilled tool use
from a live one. One difference, on purpose: the files' size and sha256 are left unknown,
because the file on disk today is not the file the transcript's tool use saw, and a
current hash would make an old observation look fresh to the read gate.
"""

from __future__ import annotations

import os
from typing import Any

from memory.agents.base import HookEvent
from memory.capture import ingest as capture
from memory.privacy.redaction import Sanitizer, is_internal_notification
from memory.projects import Project


def prompt_sanitize(text: str, sanitizer: Sanitizer | None = None) -> str | None:
    """The prompt as stored, or None when it is protocol (a task notification) or private."""
    if is_internal_notification(text):
        return None
    cleaned = (sanitizer or Sanitizer()).text(text).strip()
    return cleaned or None


def _tool_paths(event: HookEvent) -> list[str]:
    values = (event.tool_input.get(key) for key in ("file_path", "notebook_path"))
    return [
        os.path.normpath(os.path.join(event.cwd or "/", v))
        for v in values
        if isinstance(v, str) and v
    ]


def observation_payload(
    *, event: HookEvent, project: Project, sanitizer: Sanitizer
) -> dict[str, Any]:
    """The Event payload `capture.observation_record` would have stored for this tool use."""
    # Facts "reported" empty: capture then neither stats nor hashes the file (see above).
    event.file_facts = {path: {} for path in _tool_paths(event)}
    payload = capture.tool_use_payload(event=event, sanitizer=sanitizer)
    payload["cmem_files"] = capture.files_facts(event=event, project=project)
    payload["cmem_imported"] = True
    return payload
