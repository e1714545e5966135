"""Worker side of the spool: hook events the client could not deliver, ingested in order.

The hook client writes `<ns>.<pid>.<n>.<platform>.<event>.hook` atomically (the format:
memory.protocol.spool_names; the writer: memory/hookclient/client.py). Ingesting one file:
1. claim it by renaming it into `spool/claimed/` (only one ingester wins a rename);
2. run it through the same hook handler as a live request (one transaction);
3. delete it after the commit. A crash between 2 and 3 leaves it claimed; it is re-ingested
   later, which is harmless: tool uses are idempotent by tool_use_id, summaries by prompt
   id, and a replayed prompt equal to the last one is recognised.
A file the handler refuses (not JSON, unknown event) moves to `spool/failed/` for a human.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from memory import config
from memory.agents.base import HookInputError
from memory.protocol.spool_names import is_pending, parse_name

log = logging.getLogger(__name__)

# A claimed file older than this belongs to an ingester that died: take it back.
CLAIM_STALE_S = 120.0


@dataclass
class IngestReport:
    ingested: int = 0
    failed: int = 0
    left: int = 0


def spool_dir() -> Path:
    return config.data_dir() / "spool"


def _pending(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if is_pending(p.name))
    except FileNotFoundError:
        return []


def spool_backlog() -> int:
    """How many spooled events wait to be ingested (claimed ones included)."""
    folder = spool_dir()
    return len(_pending(folder)) + len(_pending(folder / "claimed"))


def _reclaim_stale(folder: Path) -> None:
    now = time.time()
    for path in _pending(folder / "claimed"):
        try:
            if now - path.stat().st_mtime > CLAIM_STALE_S:
                os.replace(path, folder / path.name)
        except FileNotFoundError:
            pass


def spool_ingest(*, limit: int | None = None) -> IngestReport:
    """Ingest spooled events oldest first, each exactly once (see the module docstring)."""
    # the dispatch loads every agent adapter and the briefing: only a replay pays for them
    from memory.hooks.dispatch import hook_handle

    folder = spool_dir()
    report = IngestReport()
    if not folder.exists():
        return report
    _reclaim_stale(folder)
    claimed_dir = folder / "claimed"
    claimed_dir.mkdir(mode=0o700, exist_ok=True)
    for path in _pending(folder):
        if limit is not None and report.ingested + report.failed >= limit:
            break
        claimed = claimed_dir / path.name
        try:
            os.rename(path, claimed)
            os.utime(claimed)
        except FileNotFoundError:
            continue  # another ingester claimed it
        parsed = parse_name(path.name)
        try:
            if parsed is None:
                raise HookInputError(f"unrecognised spool file name {path.name!r}")
            platform, event = parsed
            hook_handle(platform=platform, event=event, body=claimed.read_bytes(), spooled=True)
        except HookInputError as exc:
            log.warning("spooled event %s refused: %s", path.name, exc)
            failed_dir = folder / "failed"
            failed_dir.mkdir(mode=0o700, exist_ok=True)
            os.replace(claimed, failed_dir / path.name)
            report.failed += 1
            continue
        except Exception:
            # Database busy or a bug: put it back and stop, so order is kept for the next run.
            log.exception("ingesting spooled event %s failed; will retry", path.name)
            os.replace(claimed, path)
            break
        claimed.unlink(missing_ok=True)
        report.ingested += 1
    report.left = len(_pending(folder))
    if report.ingested or report.failed:
        log.info(
            "spool: ingested %s, refused %s, %s left", report.ingested, report.failed, report.left
        )
    return report
