"""Builds a realistic claude-mem database (schema in docs/reference/source-rules.md) at
test time with sqlite3: two projects, a session whose observer never answered, a legacy
observation with only `text`, summaries, FTS tables and triggers as upstream has them."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

SCHEMA = """
PRAGMA journal_mode = WAL;
CREATE TABLE schema_versions (id INTEGER PRIMARY KEY, version INTEGER UNIQUE NOT NULL, applied_at TEXT NOT NULL);
CREATE TABLE sdk_sessions (
  id INTEGER PRIMARY KEY AUTOINCREMENT, content_session_id TEXT NOT NULL, memory_session_id TEXT UNIQUE,
  project TEXT NOT NULL, platform_source TEXT NOT NULL DEFAULT 'claude', user_prompt TEXT, custom_title TEXT,
  started_at TEXT NOT NULL, started_at_epoch INTEGER NOT NULL, completed_at TEXT, completed_at_epoch INTEGER,
  status TEXT CHECK(status IN ('active', 'completed', 'failed')) NOT NULL DEFAULT 'active',
  worker_port INTEGER, prompt_counter INTEGER DEFAULT 0
);
CREATE UNIQUE INDEX ux_sdk_sessions_platform_content ON sdk_sessions(platform_source, content_session_id);
CREATE TABLE user_prompts (
  id INTEGER PRIMARY KEY AUTOINCREMENT, session_db_id INTEGER REFERENCES sdk_sessions(id) ON DELETE CASCADE,
  content_session_id TEXT NOT NULL, prompt_number INTEGER NOT NULL, prompt_text TEXT NOT NULL,
  created_at TEXT NOT NULL, created_at_epoch INTEGER NOT NULL
);
CREATE TABLE observations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_session_id TEXT NOT NULL REFERENCES sdk_sessions(memory_session_id) ON DELETE CASCADE ON UPDATE CASCADE,
  project TEXT NOT NULL, text TEXT, type TEXT NOT NULL, title TEXT, subtitle TEXT, facts TEXT, narrative TEXT,
  concepts TEXT, files_read TEXT, files_modified TEXT, prompt_number INTEGER, discovery_tokens INTEGER DEFAULT 0,
  agent_type TEXT, agent_id TEXT, content_hash TEXT, generated_by_model TEXT, relevance_count INTEGER DEFAULT 0,
  merged_into_project TEXT, metadata TEXT, created_at TEXT NOT NULL, created_at_epoch INTEGER NOT NULL,
  synced_at INTEGER, origin_device_id TEXT, origin_local_id INTEGER, sync_rev INTEGER
);
CREATE UNIQUE INDEX ux_observations_session_hash ON observations(memory_session_id, content_hash);
CREATE TABLE session_summaries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  memory_session_id TEXT NOT NULL REFERENCES sdk_sessions(memory_session_id) ON DELETE CASCADE ON UPDATE CASCADE,
  project TEXT NOT NULL, request TEXT, investigated TEXT, learned TEXT, completed TEXT, next_steps TEXT,
  files_read TEXT, files_edited TEXT, notes TEXT, prompt_number INTEGER, discovery_tokens INTEGER DEFAULT 0,
  created_at TEXT NOT NULL, created_at_epoch INTEGER NOT NULL, merged_into_project TEXT
);
CREATE VIRTUAL TABLE observations_fts USING fts5(title, subtitle, narrative, text, facts, concepts, content='observations', content_rowid='id');
CREATE TRIGGER observations_ai AFTER INSERT ON observations BEGIN
  INSERT INTO observations_fts(rowid, title, subtitle, narrative, text, facts, concepts)
  VALUES (new.id, new.title, new.subtitle, new.narrative, new.text, new.facts, new.concepts);
END;
CREATE TABLE pending_messages (
  id INTEGER PRIMARY KEY AUTOINCREMENT, session_db_id INTEGER, content_session_id TEXT, message_type TEXT,
  tool_name TEXT, tool_input TEXT, tool_response TEXT, cwd TEXT, status TEXT, created_at_epoch INTEGER, tool_use_id TEXT
);
"""

DAY = 86_400_000
T0 = 1_793_000_000_000  # 2026-10-26 (ms)


def _iso(epoch: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def build_claude_mem_db(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    db.executemany(
        "INSERT INTO schema_versions (version, applied_at) VALUES (?, ?)",
        [(v, _iso(T0)) for v in range(1, 50)],
    )
    sessions = [
        # (content id, memory id, project, start, status)
        ("cc-1111", "mem-aaaa", "shop-api", T0, "completed"),
        ("cc-2222", "mem-bbbb", "shop-api", T0 + DAY, "completed"),
        ("cc-3333", None, "blog", T0 + 2 * DAY, "active"),  # the observer never answered
    ]
    for cid, mid, project, start, status in sessions:
        db.execute(
            "INSERT INTO sdk_sessions (content_session_id, memory_session_id, project, user_prompt, started_at, started_at_epoch,"
            " completed_at, completed_at_epoch, status, prompt_counter) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (cid, mid, project, f"first prompt of {cid}", _iso(start), start, _iso(start + 3_600_000) if status == "completed" else None,
             start + 3_600_000 if status == "completed" else None, status, 2),
        )  # fmt: skip
    for session_db_id, (cid, _, _, start, _) in enumerate(sessions, start=1):
        for number, text in enumerate(
            [f"first prompt of {cid}", "now add tests for the checkout flow"], start=1
        ):
            db.execute(
                "INSERT INTO user_prompts (session_db_id, content_session_id, prompt_number, prompt_text, created_at, created_at_epoch)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    session_db_id,
                    cid,
                    number,
                    text,
                    _iso(start + number * 60_000),
                    start + number * 60_000,
                ),
            )
    observations = [
        ("mem-aaaa", "shop-api", "bugfix", "Checkout total ignored discounts", ["Discount applied after tax in checkout/total.py"],
         "The total was computed before discounts; moved the discount step first.", ["problem-solution"], ["checkout/total.py"], ["checkout/total.py"], T0 + 600_000),
        ("mem-aaaa", "shop-api", "discovery", "Payments use Stripe idempotency keys", ["payments/stripe.py sets Idempotency-Key per order"],
         "Retries are safe because every charge carries the order id as idempotency key.", ["how-it-works"], ["payments/stripe.py"], [], T0 + 900_000),
        ("mem-bbbb", "shop-api", "decision", "Keep prices as integer cents", ["Money is stored as int cents"],
         "Floats rounded wrongly; integer cents everywhere.", ["trade-off", "decision"], [], ["checkout/money.py"], T0 + DAY + 300_000),
    ]  # fmt: skip
    for mid, project, kind, title, facts, narrative, concepts, read, modified, at in observations:
        db.execute(
            "INSERT INTO observations (memory_session_id, project, type, title, subtitle, facts, narrative, concepts, files_read,"
            " files_modified, prompt_number, discovery_tokens, content_hash, generated_by_model, created_at, created_at_epoch)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 840, ?, 'claude-haiku-4-5-20251001', ?, ?)",
            (mid, project, kind, title, f"subtitle of {title}", json.dumps(facts), narrative, json.dumps(concepts),
             json.dumps(read), json.dumps(modified), hashlib.sha256(title.encode()).hexdigest()[:16], _iso(at), at),
        )  # fmt: skip
    # A legacy row from before typed fields: only `text`, and a bare-string files column.
    db.execute(
        "INSERT INTO observations (memory_session_id, project, text, type, files_read, created_at, created_at_epoch)"
        " VALUES ('mem-bbbb', 'shop-api', 'Legacy note: README explains local setup\nmore', 'discovery', 'README.md', ?, ?)",
        (_iso(T0 + DAY + 400_000), T0 + DAY + 400_000),
    )
    # An orphan whose session row is gone.
    db.execute(
        "INSERT INTO observations (memory_session_id, project, type, title, created_at, created_at_epoch) VALUES ('mem-gone', 'x', 'change', 'orphan', ?, ?)",
        (_iso(T0), T0),
    )
    for mid, project, at, request in [
        ("mem-aaaa", "shop-api", T0 + 1_800_000, "Fix checkout discounts"),
        ("mem-aaaa", "shop-api", T0 + 3_000_000, "Add checkout tests"),
        ("mem-bbbb", "shop-api", T0 + DAY + 900_000, "Move money to cents"),
    ]:
        db.execute(
            "INSERT INTO session_summaries (memory_session_id, project, request, investigated, learned, completed, next_steps, notes,"
            " prompt_number, created_at, created_at_epoch) VALUES (?, ?, ?, 'checkout module', 'discounts before tax', 'fixed total', 'tests', '', 1, ?, ?)",
            (mid, project, request, _iso(at), at),
        )
    db.commit()
    db.close()
    return path
