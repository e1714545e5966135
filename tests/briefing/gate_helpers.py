"""Rows and requests shared by the context, gate, file-view and ledger tests: real projects
in tmp_path, real files, observations made through the ORM with their ObservationFile rows,
and hook payloads shaped like the captured Claude Code 2.1.332 ones."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from django.test import Client

from memory.models import Observation, ObservationFile, Session, Summary
from tests.support import CLAUDE_FIXTURES

SID = "571a3c56-e5f8-4a93-b71d-946a0601887f"


def fixture(name: str) -> dict[str, Any]:
    return json.loads((CLAUDE_FIXTURES / name).read_text())


def make_project(tmp_path: Path, name: str = "proj") -> Path:
    root = tmp_path / name
    root.mkdir()
    return root


def write_file(root: Path, rel: str, size: int = 3000, text: str | None = None) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if text is None:
        line = f"# line of {rel}\n"
        text = (line * (size // len(line) + 1))[:size]
    path.write_text(text)
    return path


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_obs(
    session: Session,
    title: str,
    rel: str,
    *,
    created: datetime,
    role: str = "read",
    content_hash: str = "",
    files_touched: int = 1,
    type: str = "discovery",
    narrative: str = "",
) -> Observation:
    """An observation that read or modified `rel` among `files_touched` files in total."""
    others = [f"other/{title[:10].replace(' ', '_')}_{i}.py" for i in range(files_touched - 1)]
    reads = ([rel] if role == "read" else []) + others
    mods = [rel] if role == "modified" else []
    obs = Observation.objects.create(
        session=session,
        project=session.project,
        type=type,
        title=title,
        narrative=narrative,
        files_read=reads,
        files_modified=mods,
        created=created,
    )
    ObservationFile.objects.create(
        observation=obs,
        project=session.project,
        path=rel,
        role=role,
        content_hash=content_hash,
        created=created,
    )
    for other in others:
        ObservationFile.objects.create(
            observation=obs, project=session.project, path=other, role="read", created=created
        )
    return obs


def make_summary(session: Session, request: str, *, created: datetime, **fields: str) -> Summary:
    return Summary.objects.create(
        session=session, project=session.project, request=request, created=created, **fields
    )


def gate_payload(
    cwd: Path, file_path: Path | str, session_id: str = SID, **tool_input: Any
) -> dict[str, Any]:
    payload = fixture("PreToolUse.json")
    payload.update(cwd=str(cwd), session_id=session_id)
    payload["tool_input"] = {"file_path": str(file_path), **tool_input}
    return payload


def post_hook(client: Client, event: str, payload: dict[str, Any]) -> dict[str, Any]:
    resp = client.post(
        f"/api/hooks/claude-code/{event}", data=json.dumps(payload), content_type="application/json"
    )
    assert resp.status_code == 200, resp.content
    return resp.json()


def post_gate(
    client: Client, cwd: Path, file_path: Path | str, session_id: str = SID, **tool_input: Any
) -> dict[str, Any]:
    return post_hook(client, "file-context", gate_payload(cwd, file_path, session_id, **tool_input))


def post_context(
    client: Client, cwd: Path, source: str = "startup", session_id: str = SID
) -> dict[str, Any]:
    payload = fixture("SessionStart.json")
    payload.update(cwd=str(cwd), session_id=session_id, source=source)
    return post_hook(client, "context", payload)


def decision(out: dict[str, Any]) -> str:
    """deny, allow (advisory context) or pass (no opinion: `{}`)."""
    if not out:
        return "pass"
    # Advisory context carries no permissionDecision: Claude Code's own rules still apply.
    return str(out["hookSpecificOutput"].get("permissionDecision", "allow"))


def reason(out: dict[str, Any]) -> str:
    return str(out["hookSpecificOutput"]["permissionDecisionReason"])


def added_context(out: dict[str, Any]) -> str:
    return str(out["hookSpecificOutput"]["additionalContext"])
