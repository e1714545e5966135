"""`cmem import claude-mem [DB]`: bring a claude-mem database (`~/.claude-mem/claude-mem.db`,
schema in docs/reference/source-rules.md) over, so its users keep their memory.

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
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory import config
from memory.briefing.gate import UNKNOWN_HASH
from memory.importers.json_io import FORMAT, FORMAT_VERSION, memory_import
from memory.importers.report import ImportReport
from memory.projects import relative_path

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
            "cwd": str(row.get("cwd") or row.get("project_path") or ""),
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


def _git_root(path: str) -> str:
    """The git work tree holding `path`, when it still exists on this machine."""
    current = path
    while current and current != os.path.dirname(current):
        if os.path.exists(os.path.join(current, ".git")):
            return current
        current = os.path.dirname(current)
    return ""


def infer_root(project: str, sessions: list[dict[str, Any]]) -> tuple[str, str]:
    """(root, how it was found) for one project of a claude-mem database, which stores none:
    1. the sessions' cwd, where recorded (the most common one);
    2. the git work tree holding the common prefix of the files' paths, if it exists here;
    3. in that common prefix, the folder named like the project (claude-mem names projects
       after their folder);
    4. the common prefix itself. ('', reason) when no path is absolute."""
    cwds = [s["cwd"] for s in sessions if s.get("cwd", "").startswith("/")]
    if cwds:
        return max(set(cwds), key=cwds.count), "sessions' cwd"
    paths = [
        p
        for s in sessions
        for o in s["observations"]
        for p in (*o["files_read"], *o["files_modified"])
        if p.startswith("/")
    ]
    if not paths:
        return "", "no absolute paths"
    prefix = os.path.commonpath([os.path.dirname(p) for p in paths])
    git = _git_root(prefix)
    if git and git != "/":
        return git, "git work tree"
    parts = prefix.split("/")
    if project in parts:
        return "/".join(parts[: parts.index(project) + 1]), "folder named like the project"
    return prefix, "common prefix of the file paths"


def roots_apply(
    document: dict[str, Any], overrides: dict[str, str], report: ImportReport
) -> dict[str, str]:
    """Give every session its project's root and every file a project-relative path (as cmem's
    capture stores them, so the read gate finds them), marked with an unknown hash: the
    history is evidence, but whether each file changed since is unknown."""
    by_project: dict[str, list[dict[str, Any]]] = {}
    for session in document["sessions"]:
        by_project.setdefault(session["project"], []).append(session)
    roots: dict[str, str] = {}
    for project, sessions in sorted(by_project.items()):
        if project in overrides:
            root, how = os.path.abspath(os.path.expanduser(overrides[project])), "--root"
        else:
            root, how = infer_root(project, sessions)
        roots[project] = root
        report.notes.append(f"root of {project}: {root or '(none)'} ({how})")
        for session in sessions:
            session["project_root"] = root
            session["cwd"] = session.get("cwd") or root
            for obs in session["observations"]:
                read = [relative_path(p, root) if root else p for p in obs["files_read"]]
                modified = [relative_path(p, root) if root else p for p in obs["files_modified"]]
                obs["files_read"], obs["files_modified"] = read, modified
                obs["files"] = [
                    {"path": p, "role": "modified", "content_hash": UNKNOWN_HASH} for p in modified
                ] + [{"path": p, "role": "read", "content_hash": UNKNOWN_HASH} for p in read]
    return roots


HELP = "A claude-mem database (default ~/.claude-mem/claude-mem.db)."


def add_arguments(parser: Any) -> None:
    parser.add_argument("db", nargs="?", type=Path, help="The claude-mem.db file.")
    parser.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="PROJECT=PATH",
        help="The root folder of a project (overrides the inferred one); repeatable.",
    )


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
    overrides: dict[str, str] = {}
    for item in options.get("root") or []:
        project, sep, root = str(item).partition("=")
        if not sep or not project or not root:
            raise ValueError(f"--root {item!r}: expected PROJECT=PATH")
        overrides[project] = root
    roots_apply(document, overrides, report)
    tick = progress(len(document["sessions"]), "sessions")
    return memory_import(document=document, report=report, progress=tick)
