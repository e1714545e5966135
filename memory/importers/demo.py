"""`cmem demo`: a bundled, realistic project history loaded through the JSON import path.

Four sessions over four days on a sample shop (`acme-shop`): prompts, observations of every
type, summaries, a deliverable with its bytes, and ledger lines of the gate at work. The
times are moved so the last session ended an hour ago: the timeline shows it as recent.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime, timedelta
from importlib import resources
from typing import Any

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memory import config
from memory.importers.json_io import memory_import
from memory.importers.report import ImportReport
from memory.models import Session

DEMO_FILE = "acme-shop.json"
_TIME_KEYS = {"started", "ended", "created"}


def demo_document() -> dict[str, Any]:
    return json.loads(
        resources.files("memory.demo_data").joinpath(DEMO_FILE).read_text(encoding="utf-8")
    )


def _times(value: Any) -> list[datetime]:
    if isinstance(value, dict):
        found = [
            parse_datetime(v) for k, v in value.items() if k in _TIME_KEYS and isinstance(v, str)
        ]
        return [d for d in found if d] + [t for v in value.values() for t in _times(v)]
    if isinstance(value, list):
        return [t for v in value for t in _times(v)]
    return []


def _shift(value: Any, delta: timedelta) -> Any:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            when = parse_datetime(item) if key in _TIME_KEYS and isinstance(item, str) else None
            out[key] = (when + delta).isoformat() if when else _shift(item, delta)
        return out
    if isinstance(value, list):
        return [_shift(v, delta) for v in value]
    return value


def demo_load(*, now: datetime | None = None) -> ImportReport | None:
    """Load the demo history; None when it is already loaded (loading it twice would only
    move its times, so it is refused rather than duplicated)."""
    document = demo_document()
    ids = [s["session_id"] for s in document["sessions"]]
    if Session.objects.filter(session_id__in=ids).exists():
        return None
    newest = max(_times(document["sessions"]))
    document = _shift(
        copy.deepcopy(document), (now or timezone.now()) - timedelta(hours=1) - newest
    )
    _deliverable_files_write(document)
    return memory_import(document=document, report=ImportReport())


def _deliverable_files_write(document: dict[str, Any]) -> None:
    """The demo's deliverables carry their bytes, so My Work can open and download them."""
    root = config.ensure_data_dir() / "deliverables"
    for session in document["sessions"]:
        for item in session.get("deliverables") or []:
            content = item.get("demo_content")
            if content is None:
                continue
            target = (root / item["stored_path"]).resolve()
            if root.resolve() not in target.parents:
                raise ValueError(
                    f"demo deliverable path escapes the data dir: {item['stored_path']}"
                )
            config.write_atomic(target, content.encode())
