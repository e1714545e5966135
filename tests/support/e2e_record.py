"""What an end-to-end test recorded, kept for `python -m tests.bench offline`.

Every e2e test that runs a real agent CLI against a real worker calls `e2e_record` when its
worker has stopped. It writes `<data dir>/e2e-recorded/<name>/`:
- `events.jsonl`: each captured tool use and summary request as the worker stored it (the
  hook payload after capture's sanitising, with the `cmem_files` facts and hashes), in order;
- `prompts.jsonl`: the sessions' prompts;
- `transcripts/<session>.jsonl`: the agent's own transcript of each session, when it wrote one;
- `meta.json`: which agent and CLI version, how many events.

The test's scratch folder is replaced by `/home/dev` everywhere, so a recording reads the
same from one run to the next. With CMEM_E2E_RECORD_INTO set (a folder), the recording is
also copied there: `CMEM_E2E_RECORD_INTO=tests/bench/data/e2e-recorded` refreshes the
set the benchmark ships (docs/benchmarks/offline.md).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

STABLE_ROOT = "/home/dev"
TRANSCRIPT_CAP = 2_000_000  # bytes; a transcript past this is cut at a line end


def _rows(db: Path, sql: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql).fetchall()]
    finally:
        conn.close()


def _stable(text: str, scratch: str) -> str:
    return text.replace(scratch, STABLE_ROOT) if scratch else text


def e2e_record(*, data_dir: Path, scratch: Path, name: str, agent: str, version: str) -> Path:
    """Write the recording of the test whose worker used `data_dir`; returns its folder.

    Called from the tests' teardown: a worker that never started (no database) or a
    database it cannot read is reported and skipped, so the test's own failure stays the
    one shown."""
    out = data_dir / "e2e-recorded" / name
    try:
        return _record(data_dir=data_dir, out=out, scratch=scratch, agent=agent, version=version)
    except (OSError, sqlite3.Error) as exc:
        print(f"e2e_record: nothing recorded for {name}: {exc}")
        return out


def _record(*, data_dir: Path, out: Path, scratch: Path, agent: str, version: str) -> Path:
    db = data_dir / "cmem.sqlite3"
    if not db.is_file():
        raise FileNotFoundError(f"no worker database at {db}")
    if out.exists():
        shutil.rmtree(out)
    (out / "transcripts").mkdir(parents=True)
    root = str(scratch.resolve())
    sessions = _rows(
        db, "SELECT id, platform, session_id, transcript_path FROM memory_session ORDER BY id"
    )
    sid = {s["id"]: s["session_id"] for s in sessions}
    events = _rows(
        db,
        "SELECT session_id, kind, tool_name, tool_use_id, prompt_number, payload, created "
        "FROM memory_event ORDER BY created, id",
    )
    prompts = _rows(
        db, "SELECT session_id, number, text FROM memory_prompt ORDER BY session_id, number"
    )
    with (out / "events.jsonl").open("w") as fh:
        for event in events:
            line = {
                **event,
                "session_id": sid.get(event["session_id"], ""),
                "payload": json.loads(event["payload"] or "{}"),
            }
            fh.write(_stable(json.dumps(line, ensure_ascii=False, sort_keys=True), root) + "\n")
    with (out / "prompts.jsonl").open("w") as fh:
        for prompt in prompts:
            prompt = {**prompt, "session_id": sid.get(prompt["session_id"], "")}
            fh.write(_stable(json.dumps(prompt, ensure_ascii=False, sort_keys=True), root) + "\n")
    kept = 0
    for session in sessions:
        path = Path(session["transcript_path"] or "")
        if not session["transcript_path"] or not path.is_file():
            continue
        raw = path.read_bytes()
        if len(raw) > TRANSCRIPT_CAP:
            raw = raw[: raw.rfind(b"\n", 0, TRANSCRIPT_CAP) + 1]
        text = _stable(raw.decode("utf-8", errors="replace"), root)
        (out / "transcripts" / f"{session['session_id']}.jsonl").write_text(text)
        kept += 1
    meta = {
        "agent": agent,
        "version": version,
        "sessions": len(sessions),
        "events": len(events),
        "transcripts": kept,
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    into = os.environ.get("CMEM_E2E_RECORD_INTO")
    if into:
        target = Path(into) / out.name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(out, target)
    return out
