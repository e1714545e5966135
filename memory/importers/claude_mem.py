"""`cmem import claude-mem [DB]`: bring a claude-mem database (`~/.claude-mem/claude-mem.db`,
schema in reference/claude-mem-upstream.md §4) over, so its users keep their memory.

The database is opened read-only and translated into a cmem export document, which then
goes through `json_io.memory_import`: one import path, one set of idempotency rules.
- sdk_sessions -> sessions (content_session_id is the agent's id; platform 'claude' is ours
  'claude-code');
- user_prompts -> prompts (by session_db_id);
- observations and session_summaries hang off memory_session_id, the observer's id; rows
  whose session is unknown are counted as problems, not guessed at;
- files_read / files_modified become ObservationFile rows for the gate.
Older schemas lack some columns; every column is read only when it exists.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory import config
from memory.importers.json_io import FORMAT, FORMAT_VERSION, memory_import
from memory.importers.report import ImportReport

_PLATFORMS = {"claude": "claude-code", "claude-code": "claude-code"}


def default_db() -> Path:
    return Path("~/.claude-mem/claude-mem.db").expanduser()


def _connect(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise ValueError(f"{path}: no claude-mem database there")
    # Read-only: claude-mem may still be running against it, and we never change its data.
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    db.row_factory = sqlite3.Row
    return db


def _owner(
    by_memory_id: dict[str, dict[str, Any]],
    row: dict[str, Any],
    *,
    table: str,
    report: ImportReport,
) -> dict[str, Any] | None:
    """The session a row belongs to through its memory_session_id; a problem noted when none."""
    owner = by_memory_id.get(row.get("memory_session_id") or "")
    if owner is None:
        report.problem(
            f"{table} #{row['id']}: no session with memory_session_id {row.get('memory_session_id')!r}"
        )
    return owner


def _rows(db: sqlite3.Connection, table: str, order: str) -> list[dict[str, Any]]:
    exists = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    if not exists:
        return []
    columns = {row["name"] for row in db.execute(f"PRAGMA table_info({table})")}
    order_by = ", ".join(c.strip() for c in order.split(",") if c.strip() in columns) or "rowid"
    return [dict(row) for row in db.execute(f"SELECT * FROM {table} ORDER BY {order_by}")]


def _when(row: dict[str, Any], name: str) -> str | None:
    """An ISO time from `<name>_epoch` (ms) or the `<name>` text column."""
    epoch = row.get(f"{name}_epoch")
    if isinstance(epoch, int | float) and epoch > 0:
        return datetime.fromtimestamp(epoch / 1000, tz=UTC).isoformat()
    text = row.get(name)
    if isinstance(text, str) and text:
        return text if ("+" in text[10:] or text.endswith("Z")) else text + "+00:00"
    return None


def _json_list(value: Any) -> list[str]:
    if value in (None, ""):
        return []
    try:
        data = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return [str(value)]  # legacy rows kept a bare string
    if isinstance(data, list):
        return [str(v) for v in data if str(v).strip()]
    return [str(data)]


def claude_mem_document(db: sqlite3.Connection, report: ImportReport) -> dict[str, Any]:
    """The claude-mem database as a cmem export document."""
    sessions: dict[int, dict[str, Any]] = {}
    by_memory_id: dict[str, dict[str, Any]] = {}
    for row in _rows(db, "sdk_sessions", "started_at_epoch, id"):
        session = {
            "platform": _PLATFORMS.get(
                str(row.get("platform_source") or "claude"), str(row.get("platform_source"))
            ),
            "session_id": row["content_session_id"],
            "project": row.get("project") or "unknown",
            "status": row.get("status")
            if row.get("status") in {"active", "completed", "failed"}
            else "completed",
            "prompt_counter": int(row.get("prompt_counter") or 0),
            "started": _when(row, "started_at"),
            "ended": _when(row, "completed_at"),
            "prompts": [],
            "observations": [],
            "summaries": [],
        }
        sessions[row["id"]] = session
        if row.get("memory_session_id"):
            by_memory_id[row["memory_session_id"]] = session
    for row in _rows(db, "user_prompts", "session_db_id, prompt_number"):
        owner = sessions.get(int(row.get("session_db_id") or 0))
        if owner is None:
            report.problem(f"user_prompts #{row['id']}: its session is missing")
            continue
        owner["prompts"].append(
            {
                "number": row["prompt_number"],
                "text": row["prompt_text"],
                "created": _when(row, "created_at"),
            }
        )
    for row in _rows(db, "observations", "created_at_epoch, id"):
        owner = _owner(by_memory_id, row, table="observations", report=report)
        if owner is None:
            continue
        title = (
            row.get("title")
            or (row.get("text") or "").strip().split("\n")[0][:200]
            or f"claude-mem observation {row['id']}"
        )
        owner["observations"].append(
            {
                "type": row.get("type") or "discovery",
                "title": title,
                "subtitle": row.get("subtitle") or "",
                "facts": _json_list(row.get("facts")),
                "narrative": row.get("narrative") or row.get("text") or "",
                "concepts": _json_list(row.get("concepts")),
                "files_read": _json_list(row.get("files_read")),
                "files_modified": _json_list(row.get("files_modified")),
                "prompt_number": row.get("prompt_number"),
                "compressor": row.get("generated_by_model") or "claude-mem",
                "output_tokens": int(row.get("discovery_tokens") or 0),
                "content_hash": row.get("content_hash") or "",
                "created": _when(row, "created_at"),
            }
        )
    for row in _rows(db, "session_summaries", "created_at_epoch, id"):
        owner = _owner(by_memory_id, row, table="session_summaries", report=report)
        if owner is None:
            continue
        fields = ("request", "investigated", "learned", "completed", "next_steps", "notes")
        summary: dict[str, Any] = {f: row.get(f) or "" for f in fields}
        summary.update(
            prompt_number=row.get("prompt_number"),
            compressor="claude-mem",
            created=_when(row, "created_at"),
        )
        owner["summaries"].append(summary)
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "project": None,
        "sessions": list(sessions.values()),
    }


HELP = "A claude-mem database (default ~/.claude-mem/claude-mem.db)."


def add_arguments(parser: Any) -> None:
    parser.add_argument("db", nargs="?", type=Path, help="The claude-mem.db file.")


def import_from(*, options: dict[str, Any], report: ImportReport, progress: Any) -> ImportReport:
    path: Path = options.get("db") or default_db()
    if path.resolve() == (config.data_dir() / "cmem.sqlite3").resolve():
        raise ValueError(f"{path} is cmem's own database")
    db = _connect(path)
    try:
        document = claude_mem_document(db, report)
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"{path}: cannot read it as a claude-mem database ({exc})") from exc
    finally:
        db.close()
    tick = progress(len(document["sessions"]), "sessions")
    return memory_import(document=document, report=report, progress=tick)
