"""`cmem export` and `cmem import json`: the whole memory as one JSON document.

The document nests everything under its session (prompts, observations with their file
rows, summaries, deliverable metadata), so a project can be moved between machines or
shared, and `cmem demo` loads its bundled history through the same `memory_import`.
A round trip into an empty database loses nothing that the document carries.

Import is idempotent: sessions by (platform, session id), prompts by number, observations
by content hash, summaries by time and request, deliverables by path and sha256.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, TypedDict

from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memory import config, extensions
from memory.importers.report import ImportReport
from memory.models import (
    ContextCache,
    LedgerEntry,
    Observation,
    ObservationFile,
    Prompt,
    Session,
    Summary,
)
from memory.projects import relative_path
from memory.team import scope

FORMAT = "cmem-export"
FORMAT_VERSION = 1

_OBSERVATION_FIELDS = (
    "type", "title", "subtitle", "facts", "narrative", "concepts", "files_read", "files_modified", "tool_name",
    "prompt_number", "compressor", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "content_hash",
)  # fmt: skip
# Curation (issue 31), each with the values an import accepts; anything else keeps the
# default. `superseded_by` names a local row id and is not carried (the status is).
_CURATION_CHOICES: dict[str, tuple[Any, ...]] = {
    "status": tuple(Observation.Status.values),
    "certainty": tuple(Observation.Certainty.values),
    "origin": tuple(Observation.Origin.values),
    "scope": tuple(Observation.Scope.values),
    "pinned": (True, False),
    "demoted": (True, False),
    "person_edited": (True, False),
}
_CURATION_TEXT = ("status_reason", "topic")
_SUMMARY_FIELDS = (
    "prompt_number", "request", "investigated", "learned", "completed", "next_steps", "notes", "compressor",
    "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
)  # fmt: skip
_SESSION_FIELDS = (
    "platform",
    "session_id",
    "project",
    "project_root",
    "cwd",
    "transcript_path",
    "status",
    "prompt_counter",
)
_LEDGER_FIELDS = ("kind", "path", "tokens_shown", "tokens_avoided", "tokens_spent")


class ExportDocument(TypedDict):
    format: str
    version: int
    exported_at: str
    project: str | None
    sessions: list[dict[str, Any]]


def time_export(value: datetime | None) -> str | None:
    """A time as the document writes it (apps' session parts use it too)."""
    return value.isoformat() if value else None


def time_import(value: Any) -> datetime:
    """A document's time as an aware datetime; now when missing or unreadable."""
    parsed = parse_datetime(value) if isinstance(value, str) else None
    if parsed is None:
        return timezone.now()
    return parsed if parsed.tzinfo else timezone.make_aware(parsed)


def memory_export(*, project: str = "") -> ExportDocument:
    """Every session (of one project, if named) with everything hanging off it, oldest first."""
    # Under a teammate's token, only their own sessions (memory/team/scope.py).
    sessions = scope.owned(Session.objects.order_by("started", "pk"), "owner")
    if project:
        sessions = sessions.filter(project=project)
    out: list[dict[str, Any]] = []
    rows = list(sessions.prefetch_related("prompts", "observations__files", "summaries", "ledger"))
    # Rows other apps keep per session (deliverables) come through memory.extensions.
    parts = {part.name: part.export(rows) for part in extensions.session_parts()}
    for session in rows:
        row: dict[str, Any] = {f: getattr(session, f) for f in _SESSION_FIELDS}
        row["started"], row["ended"] = time_export(session.started), time_export(session.ended)
        row["prompts"] = [
            {"number": p.number, "text": p.text, "created": time_export(p.created)}
            for p in sorted(session.prompts.all(), key=lambda p: p.number)
        ]
        row["observations"] = [
            {
                **{f: getattr(o, f) for f in _OBSERVATION_FIELDS},
                **{f: getattr(o, f) for f in (*_CURATION_CHOICES, *_CURATION_TEXT)},
                "edited": time_export(o.edited),
                "created": time_export(o.created),
                "files": [
                    {
                        "path": f.path,
                        "role": f.role,
                        "content_hash": f.content_hash,
                        "created": time_export(f.created),
                    }
                    for f in sorted(o.files.all(), key=lambda f: (f.role, f.path))
                ],
            }
            for o in sorted(session.observations.all(), key=lambda o: (o.created, o.pk))
        ]
        row["summaries"] = [
            {**{f: getattr(s, f) for f in _SUMMARY_FIELDS}, "created": time_export(s.created)}
            for s in sorted(session.summaries.all(), key=lambda s: (s.created, s.pk))
        ]
        for name, by_session in parts.items():
            row[name] = by_session.get(session.pk, [])
        row["ledger"] = [
            {**{f: getattr(e, f) for f in _LEDGER_FIELDS}, "created": time_export(e.created)}
            for e in sorted(session.ledger.all(), key=lambda e: (e.created, e.pk))
        ]
        out.append(row)
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "exported_at": timezone.now().isoformat(),
        "project": project or None,
        "sessions": out,
    }


def memory_import(
    *, document: dict[str, Any], report: ImportReport, progress: Any = None
) -> ImportReport:
    """Load an export document; each session in its own transaction so a bad one stops alone."""
    if document.get("format") != FORMAT:
        raise ValueError(f"not a cmem export (expected format {FORMAT!r})")
    if int(document.get("version", 0)) > FORMAT_VERSION:
        raise ValueError(
            f"export version {document.get('version')} is newer than this cmem understands ({FORMAT_VERSION})"
        )
    projects: set[str] = set()
    for index, data in enumerate(document.get("sessions") or []):
        try:
            with transaction.atomic():
                session = _session_import(data, report)
            projects.add(session.project)
        except (KeyError, TypeError, ValueError) as exc:
            report.problem(f"session #{index + 1}: {exc!r}")
        if progress is not None:
            progress()
    for project in projects:
        ContextCache.invalidate(project=project)
    return report


def _session_import(data: dict[str, Any], report: ImportReport) -> Session:
    defaults = {
        f: data[f] for f in _SESSION_FIELDS if f in data and f not in {"platform", "session_id"}
    }
    defaults["started"] = time_import(data.get("started"))
    defaults["ended"] = time_import(data["ended"]) if data.get("ended") else None
    session, created = Session.objects.get_or_create(
        platform=data.get("platform") or "claude-code",
        session_id=str(data["session_id"]),
        defaults=defaults,
    )
    report.add("session", created)
    prompts: dict[int, Prompt] = {p.number: p for p in session.prompts.all()}
    for item in data.get("prompts") or []:
        number = int(item["number"])
        if number in prompts:
            report.add("prompt", created=False)
            continue
        prompts[number] = Prompt.objects.create(
            session=session,
            number=number,
            text=str(item["text"]),
            created=time_import(item.get("created")),
        )
        report.add("prompt", created=True)
    if prompts and session.prompt_counter < max(prompts):
        session.prompt_counter = max(prompts)
        session.save(update_fields=["prompt_counter"])
    for item in data.get("observations") or []:
        report.add("observation", observation_import(session=session, data=item) is not None)
    for item in data.get("summaries") or []:
        report.add("summary", _summary_import(session, item))
    for part in extensions.session_parts():
        for created in part.import_rows(session, list(data.get(part.name) or []), prompts):
            report.add(part.noun, created)
    for item in data.get("ledger") or []:
        report.add("ledger entry", _ledger_import(session, item))
    return session


def observation_import(*, session: Session, data: dict[str, Any]) -> Observation | None:
    """One observation and its file rows; None when the session already holds it.

    Without explicit `files`, the rows come from files_read/files_modified, made relative to
    the session's project root the way the gate looks them up."""
    fields = {f: data[f] for f in _OBSERVATION_FIELDS if f in data and data[f] is not None}
    fields |= {f: data[f] for f, allowed in _CURATION_CHOICES.items() if data.get(f) in allowed}
    fields |= {f: data[f][:2000] for f in _CURATION_TEXT if isinstance(data.get(f), str)}
    if data.get("edited"):
        fields["edited"] = time_import(data["edited"])
    observation = Observation(
        session=session, project=session.project, created=time_import(data.get("created")), **fields
    )
    stored = session.observations.all()
    if observation.content_hash:
        stored = stored.filter(content_hash=observation.content_hash)
    else:  # kept empty, so an export of it reads back the same
        stored = stored.filter(
            title=observation.title, narrative=observation.narrative, created=observation.created
        )
    if stored.exists():
        return None
    observation.save()
    files = data.get("files")
    if files is None:
        files = [{"path": p, "role": ObservationFile.Role.READ} for p in observation.files_read]
        files += [
            {"path": p, "role": ObservationFile.Role.MODIFIED} for p in observation.files_modified
        ]
        for f in files:
            f["path"] = relative_path(str(f["path"]), session.project_root)
    ObservationFile.objects.bulk_create(
        ObservationFile(
            observation=observation,
            project=session.project,
            path=str(f["path"]),
            role=f.get("role") or ObservationFile.Role.READ,
            content_hash=f.get("content_hash") or "",
            created=time_import(f["created"]) if f.get("created") else observation.created,
        )
        for f in files
    )
    return observation


def _summary_import(session: Session, data: dict[str, Any]) -> bool:
    created = time_import(data.get("created"))
    if session.summaries.filter(created=created, request=data.get("request") or "").exists():
        return False
    fields = {f: data[f] for f in _SUMMARY_FIELDS if f in data and data[f] is not None}
    Summary.objects.create(session=session, project=session.project, created=created, **fields)
    return True


def _ledger_import(session: Session, data: dict[str, Any]) -> bool:
    created = time_import(data.get("created"))
    fields = {f: data[f] for f in _LEDGER_FIELDS if f in data and data[f] is not None}
    if session.ledger.filter(created=created, kind=fields.get("kind", "")).exists():
        return False
    LedgerEntry.objects.create(session=session, project=session.project, created=created, **fields)
    return True


def export_write(*, document: ExportDocument, path: str) -> None:
    body = json.dumps(document, ensure_ascii=False, indent=1) + "\n"
    if path == "-":
        sys.stdout.write(body)
    else:
        # User-only: an export holds everything the memory does.
        config.write_atomic(Path(path).expanduser(), body.encode())


def document_read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except ValueError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data


HELP = "A cmem JSON export (from `cmem export`)."


def add_arguments(parser: Any) -> None:
    parser.add_argument("file", type=Path, help="The export file.")


def import_from(*, options: dict[str, Any], report: ImportReport, progress: Any) -> ImportReport:
    document = document_read(options["file"])
    tick = progress(len(document.get("sessions") or []), "sessions")
    return memory_import(document=document, report=report, progress=tick)
