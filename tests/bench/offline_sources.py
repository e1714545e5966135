"""The recorded sessions `python -m tests.bench offline` runs over, with the truth it checks them against.

Three recorded sources, each a list of sessions (a session's tool uses in order):
- shared fixtures: the real Claude Code and Codex hook payloads recorded in tests/fixtures/
  (or CMEM_FIXTURES_DIR), one tool use per file;
- e2e payloads: what the end-to-end tests' real CLIs (Claude Code, Codex, Gemini CLI,
  Copilot CLI, OpenCode) sent, as the worker stored it (data/e2e-recorded/<set>/events.jsonl,
  written by tests/support/e2e_record.py), with capture's file hashes;
- transcripts: the tool uses read back out of the agents' own transcripts (Claude Code's
  JSONL, Codex's rollouts) the same way `cmem import claude-code` / `import codex` read them.

The truth: an Edit/Write/MultiEdit/NotebookEdit changed its file, an apply_patch the files
its headers name, a failed tool use nothing; a shell command changed the files
data/e2e-recorded/labels.json lists for it (labelled by hand; a command missing from it is
reported as unlabelled, never guessed with the detector under test).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA = Path(__file__).with_name("data") / "e2e-recorded"
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$", re.M)
_EDITS = {"Edit", "Write", "MultiEdit", "NotebookEdit", "write_file", "edit", "write"}
_SHELLS = {"Bash", "shell", "exec_command", "local_shell", "bash", "run_shell_command"}


@dataclass
class Recorded:
    """One recorded tool use and the files it really changed (project-relative or absolute)."""

    payload: dict[str, Any]
    changes: list[str] = field(default_factory=list)
    label: str = ""


@dataclass
class Source:
    name: str
    sessions: list[list[Recorded]] = field(default_factory=list)
    unlabelled: list[str] = field(default_factory=list)
    sets: list[str] = field(default_factory=list)


def shell_labels(base: Path = DATA) -> dict[str, list[str]]:
    path = base / "labels.json"
    if not path.is_file():
        return {}
    shell = json.loads(path.read_text()).get("shell", {})
    return {str(k): [str(p) for p in v] for k, v in shell.items()}


def truth(payload: dict[str, Any], labels: dict[str, list[str]]) -> list[str] | None:
    """The files the tool use changed; None for a shell command nobody labelled."""
    name = str(payload.get("tool_name", ""))
    tool_input = payload.get("tool_input") if isinstance(payload.get("tool_input"), dict) else {}
    assert isinstance(tool_input, dict)
    if payload.get("error") or payload.get("hook_event_name") == "PostToolUseFailure":
        return []
    command = tool_input.get("command") or tool_input.get("cmd") or ""
    command = " ".join(map(str, command)) if isinstance(command, list) else str(command)
    if name == "apply_patch" or "*** Begin Patch" in command:
        return [m.group(1) for m in _PATCH_FILE.finditer(command)]
    if name in _EDITS:
        path = tool_input.get("file_path") or tool_input.get("filePath") or tool_input.get("path")
        return [str(path)] if path else []
    if name in _SHELLS:
        return labels.get(command.strip())
    return []


def _cases(
    payloads: list[dict[str, Any]], labels: dict[str, list[str]], where: str, source: Source
) -> list[Recorded]:
    out: list[Recorded] = []
    for i, payload in enumerate(payloads):
        changes = truth(payload, labels)
        if changes is None:
            tool_input = payload.get("tool_input") or {}
            source.unlabelled.append(f"{where}: {tool_input}")
            changes = []
        out.append(Recorded(payload, changes, f"{where}#{i + 1} {payload.get('tool_name', '')}"))
    return out


def fixture_dirs() -> list[Path]:
    """CMEM_FIXTURES_DIR, else the recordings the test suite keeps (tests/fixtures)."""
    repo = Path(__file__).resolve().parents[2]
    for base in (
        Path(os.environ["CMEM_FIXTURES_DIR"]) if os.environ.get("CMEM_FIXTURES_DIR") else None,
        repo / "tests" / "fixtures",
    ):
        if base is not None and any(base.glob("*/PostToolUse*.json")):
            return [base]
    return []


def shared_fixtures() -> Source:
    source = Source("shared fixture payloads")
    for base in fixture_dirs():
        source.sets.append(str(base))
        for path in sorted(base.glob("*/PostToolUse*.json")):
            payload = json.loads(path.read_text())
            where = f"{path.parent.name}/{path.name}"
            # Each file is a session of its own: one tool use, unrelated to the next.
            source.sessions.append(_cases([payload], shell_labels(), where, source))
    return source


def e2e_dirs(base: Path | None = None) -> list[Path]:
    root = base or Path(os.environ.get("CMEM_E2E_RECORDED_DIR") or DATA)
    return sorted(p for p in root.glob("*") if (p / "events.jsonl").is_file())


def e2e_payloads(base: Path | None = None) -> Source:
    source = Source("e2e payloads")
    labels = shell_labels(base or DATA)
    for folder in e2e_dirs(base):
        source.sets.append(folder.name)
        by_session: dict[str, list[dict[str, Any]]] = {}
        for line in (folder / "events.jsonl").read_text().splitlines():
            event = json.loads(line)
            if event.get("kind") == "observation":
                payload = dict(event["payload"])
                payload.setdefault("tool_name", event.get("tool_name", ""))
                by_session.setdefault(str(event.get("session_id")), []).append(payload)
        for sid, payloads in by_session.items():
            where = f"{folder.name}/{sid[:8]}"
            source.sessions.append(_cases(payloads, labels, where, source))
    return source


def _transcript_payloads(path: Path) -> list[dict[str, Any]]:
    """Hook payloads out of one transcript, as the importers rebuild them."""
    from memory.importers import claude_code, codex
    from memory.importers.report import ImportReport

    report = ImportReport()
    lines = list(claude_code.transcript_lines(path, report))
    if any(line.get("type") == "session_meta" for line in lines[:3]):
        rollout = codex.rollout_parse(lines, path=str(path))
        return [codex._hook_payload(rollout, c) for c in rollout.calls.values() if c.answered]
    out: list[dict[str, Any]] = []
    for session in claude_code.transcript_parse(lines, transcript_path=str(path)).values():
        out += [
            claude_code._hook_payload(session, use)
            for use in session.tool_uses.values()
            if use.answered
        ]
    return out


def _transcript_source(name: str, files: list[Path], labels: dict[str, list[str]]) -> Source:
    source = Source(name)
    for path in files:
        payloads = _transcript_payloads(path)
        if payloads:
            owner = path.parent.parent if path.parent.name == "transcripts" else path.parent
            source.sets.append(f"{owner.name}/{path.name}")
            where = f"{owner.name}/{path.stem[:8]}"
            source.sessions.append(_cases(payloads, labels, where, source))
    return source


def e2e_transcripts(base: Path | None = None) -> Source:
    files = [p for f in e2e_dirs(base) for p in sorted((f / "transcripts").glob("*.jsonl"))]
    return _transcript_source("e2e transcripts", files, shell_labels(base or DATA))


def shared_transcripts() -> Source:
    files = [p for base in fixture_dirs() for p in sorted(base.glob("*/*.jsonl"))]
    return _transcript_source("shared fixture transcripts", files, shell_labels())
