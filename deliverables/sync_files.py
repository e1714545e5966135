"""Deliverables' bytes for `cmem sync` (memory.extensions.FileStore): the synced Markdown
carries a deliverable's metadata, and with CLAUDE_MEM_SYNC_DELIVERABLES its bytes travel
beside it. On the other machine they land where the row says, under the deliverables
folder, only when their sha256 is the row's."""

from __future__ import annotations

import hashlib
from pathlib import Path

from deliverables.models import Deliverable
from deliverables.services import DeliverableMissing, deliverable_file_path, deliverables_root
from memory import config
from memory.extensions import FileStore


def file_of(gid: str) -> tuple[Path, str, int] | None:
    deliverable = Deliverable.objects.filter(gid=gid).first()
    if deliverable is None:
        return None
    try:
        path = deliverable_file_path(deliverable=deliverable)
    except DeliverableMissing:
        return None
    return path, deliverable.sha256, path.stat().st_size


def missing() -> list[tuple[str, str]]:
    rows = Deliverable.objects.order_by("pk").values_list("gid", "sha256", "stored_path")
    root = deliverables_root()
    return [(gid, sha) for gid, sha, stored in rows if not stored or not (root / stored).is_file()]


def _target(deliverable: Deliverable) -> Path | None:
    """Where the row's bytes go: its stored path, when that stays inside the folder."""
    root = deliverables_root().resolve()
    target = (root / deliverable.stored_path).resolve()
    if not deliverable.stored_path or not target.is_relative_to(root) or target == root:
        return None
    return target


def put(gid: str, data: bytes) -> bool:
    deliverable = Deliverable.objects.filter(gid=gid).first()
    if deliverable is None or hashlib.sha256(data).hexdigest() != deliverable.sha256:
        return False
    target = _target(deliverable)
    if target is None:
        return False
    config.write_atomic(target, data)
    return True


FILE_STORE = FileStore(kind="deliverable", file_of=file_of, missing=missing, put=put)
