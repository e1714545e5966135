"""`cmem export` and `cmem import json`: the whole memory as one JSON document.

The document nests everything under its session (prompts, observations with their file
rows, summaries, deliverable metadata), so a project can be moved between machines or
shared, and `cmem demo` loads its bundled history through the same `memory_import`.
A round trip into an empty database loses nothing that the document carries.

Import is idempotent: sessions by (platform, session id), prompts by number, observations
by global id or content hash, summaries by global id or time and request, deliverables by
path and sha256. Rows keep their global ids (memory/global_ids.py) through a round trip: a
row whose id is already stored is that row and is skipped, wherever the document puts it;
a malformed id is replaced by a new one.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Any, TypedDict

from django.db import DatabaseError, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memory import config, extensions, global_ids
from memory.importers.bulk import insert_rows
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
from memory.team import scope, sharing

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
    # Under a teammate's token, only their own sessions and those of projects shared with
    # them (memory/team/scope.py); a shared session names its author and carries its
    # memory only, not the author's ledger or deliverables.
    sessions = scope.readable(Session.objects.order_by("started", "pk"), "owner")
    if project:
        sessions = sessions.filter(project=project)
    out: list[dict[str, Any]] = []
    rows = list(sessions.prefetch_related("prompts", "observations__files", "summaries", "ledger"))
    # Rows other apps keep per session (deliverables) come through memory.extensions.
    parts = {part.name: part.export(rows) for part in extensions.session_parts()}
    authors = sharing.authors(session.pk for session in rows)
    for session in rows:
        row: dict[str, Any] = {
            "gid": session.gid,
            **{f: getattr(session, f) for f in _SESSION_FIELDS},
        }
        if session.pk in authors:
            row["author"] = authors[session.pk]
        row["started"], row["ended"] = time_export(session.started), time_export(session.ended)
        row["prompts"] = [
            {"number": p.number, "text": p.text, "created": time_export(p.created)}
            for p in sorted(session.prompts.all(), key=lambda p: p.number)
        ]
        row["observations"] = [
            {
                "gid": o.gid,
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
            {
                "gid": s.gid,
                **{f: getattr(s, f) for f in _SUMMARY_FIELDS},
                "created": time_export(s.created),
            }
            for s in sorted(session.summaries.all(), key=lambda s: (s.created, s.pk))
        ]
        for name, by_session in parts.items():
            row[name] = by_session.get(session.pk, []) if session.pk not in authors else []
        row["ledger"] = [
            {**{f: getattr(e, f) for f in _LEDGER_FIELDS}, "created": time_export(e.created)}
            for e in sorted(session.ledger.all(), key=lambda e: (e.created, e.pk))
            if session.pk not in authors
        ]
        out.append(row)
    return {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "exported_at": timezone.now().isoformat(),
        "project": project or None,
        "sessions": out,
    }


# Sessions per transaction in `memory_import`: big enough that the per-batch queries (a
# handful, whatever the batch holds) cost nothing per row, small enough that a progress
# bar moves and a failed batch's per-session retry stays short.
IMPORT_BATCH = 200


def memory_import(
    *, document: dict[str, Any], report: ImportReport, progress: Any = None
) -> ImportReport:
    """Load an export document, in batches of sessions: one transaction and a few bulk
    queries per batch (dedupe by content hash in one query, bulk inserts; the FTS triggers
    fire inside the batch's transaction). A batch that fails is retried one session per
    transaction, so a bad session stops alone and is reported."""
    if document.get("format") != FORMAT:
        raise ValueError(f"not a cmem export (expected format {FORMAT!r})")
    if int(document.get("version", 0)) > FORMAT_VERSION:
        raise ValueError(
            f"export version {document.get('version')} is newer than this cmem understands ({FORMAT_VERSION})"
        )
    projects: set[str] = set()
    sessions = list(document.get("sessions") or [])
    for first in range(0, len(sessions), IMPORT_BATCH):
        batch = list(enumerate(sessions[first : first + IMPORT_BATCH], start=first))
        batch_report = ImportReport()
        try:
            with transaction.atomic():
                projects |= _batch_import(batch, batch_report)
        except (KeyError, TypeError, ValueError, DatabaseError):
            # Which session broke it is unknown: redo this batch one session at a time.
            batch_report = ImportReport()
            for index, data in batch:
                try:
                    with transaction.atomic():
                        projects.add(_session_import(data, batch_report).project)
                except (KeyError, TypeError, ValueError) as exc:
                    batch_report.problem(f"session #{index + 1}: {exc!r}")
        report.merge(batch_report)
        if progress is not None:
            for _ in batch:
                progress()
    for project in projects:
        ContextCache.invalidate(project=project)
    return report


def _batch_import(batch: list[tuple[int, Any]], report: ImportReport) -> set[str]:
    """One batch of document sessions, stored with bulk queries; the projects touched.

    A session whose fields cannot be read is reported and left out before anything is
    written; what the document repeats (same hash twice in a session) is stored once."""
    wanted: dict[tuple[str, str], tuple[int, dict[str, Any], dict[str, Any]]] = {}
    for index, data in batch:
        try:
            key, defaults = _session_key(data)
        except (KeyError, TypeError, ValueError) as exc:
            report.problem(f"session #{index + 1}: {exc!r}")
            continue
        if key in wanted:
            # Named twice: the one-session-at-a-time path (the caller's retry) adds the
            # second to the first, in document order.
            raise ValueError("session repeated in one batch")
        wanted[key] = (index, data, defaults)
    if not wanted:
        return set()
    stored = {
        (s.platform, s.session_id): s
        for s in Session.objects.filter(session_id__in={sid for _, sid in wanted})
        if (s.platform, s.session_id) in wanted
    }
    new = [
        Session(platform=key[0], session_id=key[1], **defaults)
        for key, (_, _, defaults) in wanted.items()
        if key not in stored
    ]
    _fresh_gids(Session, new)
    for key in wanted:
        report.add("session", created=key not in stored)
    Session.objects.bulk_create(new)
    for session in new:
        stored[(session.platform, session.session_id)] = session
    sessions = [(stored[key], data) for key, (_, data, _) in wanted.items()]
    pks = [s.pk for s, _ in sessions]
    prompts = _prompts_bulk(sessions, pks, report)
    _observations_bulk(sessions, pks, report)
    _summaries_bulk(sessions, pks, report)
    for session, data in sessions:
        for part in extensions.session_parts():
            rows = list(data.get(part.name) or [])
            if rows:
                for created in part.import_rows(session, rows, prompts[session.pk]):
                    report.add(part.noun, created)
    _ledger_bulk(sessions, pks, report)
    return {s.project for s, _ in sessions}


def _session_key(data: dict[str, Any]) -> tuple[tuple[str, str], dict[str, Any]]:
    """(platform, session id) and the fields a new Session gets, as `_session_import` reads them."""
    defaults = {
        f: data[f] for f in _SESSION_FIELDS if f in data and f not in {"platform", "session_id"}
    }
    defaults["started"] = time_import(data.get("started"))
    defaults["ended"] = time_import(data["ended"]) if data.get("ended") else None
    if global_ids.is_gid(data.get("gid")):
        defaults["gid"] = data["gid"]
    return (data.get("platform") or "claude-code", str(data["session_id"])), defaults


def _prompts_bulk(
    sessions: list[tuple[Session, dict[str, Any]]], pks: list[int], report: ImportReport
) -> dict[int, dict[int, Prompt]]:
    """Each session's prompts by number, the document's new ones added in one insert."""
    by_session: dict[int, dict[int, Prompt]] = {pk: {} for pk in pks}
    for prompt in Prompt.objects.filter(session_id__in=pks):
        by_session[prompt.session_id][prompt.number] = prompt
    new: list[Prompt] = []
    for session, data in sessions:
        known = by_session[session.pk]
        for item in data.get("prompts") or []:
            number = int(item["number"])
            if number in known:
                report.add("prompt", created=False)
                continue
            known[number] = Prompt(
                session=session,
                number=number,
                text=str(item["text"]),
                created=time_import(item.get("created")),
            )
            new.append(known[number])
            report.add("prompt", created=True)
    insert_rows(Prompt, new)
    bumped = []
    for session, _ in sessions:
        known = by_session[session.pk]
        if known and session.prompt_counter < max(known):
            session.prompt_counter = max(known)
            bumped.append(session)
    Session.objects.bulk_update(bumped, ["prompt_counter"])
    return by_session


def _observation_fields(data: dict[str, Any]) -> dict[str, Any]:
    fields = {f: data[f] for f in _OBSERVATION_FIELDS if f in data and data[f] is not None}
    fields |= {f: data[f] for f, allowed in _CURATION_CHOICES.items() if data.get(f) in allowed}
    fields |= {f: data[f][:2000] for f in _CURATION_TEXT if isinstance(data.get(f), str)}
    if data.get("edited"):
        fields["edited"] = time_import(data["edited"])
    return fields


def _observations_bulk(
    sessions: list[tuple[Session, dict[str, Any]]], pks: list[int], report: ImportReport
) -> None:
    """The sessions' observations not stored yet, deduped in one query, inserted in bulk,
    then their file rows in bulk (the same rules as `observation_import`)."""
    seen: set[tuple[Any, ...]] = set()
    hashed = Observation.objects.filter(session_id__in=pks).exclude(content_hash="")
    seen.update(hashed.values_list("session_id", "content_hash"))
    bare = Observation.objects.filter(session_id__in=pks, content_hash="")
    seen.update(
        (s, t, n, c)
        for s, t, n, c in bare.values_list("session_id", "title", "narrative", "created")
    )
    known_gids = _stored_gids(
        Observation, [item for _, data in sessions for item in data.get("observations") or []]
    )
    new: list[tuple[Observation, Session, dict[str, Any]]] = []
    for session, data in sessions:
        for item in data.get("observations") or []:
            observation = Observation(
                session=session,
                project=session.project,
                created=time_import(item.get("created")),
                **_with_gid(_observation_fields(item), item),
            )
            if observation.gid in known_gids:
                report.add("observation", created=False)
                continue
            key: tuple[Any, ...] = (
                (session.pk, observation.content_hash)
                if observation.content_hash
                else (session.pk, observation.title, observation.narrative, observation.created)
            )
            if key in seen:
                report.add("observation", created=False)
                continue
            seen.add(key)
            new.append((observation, session, item))
            report.add("observation", created=True)
    _fresh_gids(Observation, [o for o, _, _ in new])
    insert_rows(Observation, [o for o, _, _ in new])
    insert_rows(
        ObservationFile,
        [row for o, session, item in new for row in _observation_files(o, session, item)],
    )


def _observation_files(
    observation: Observation, session: Session, data: dict[str, Any]
) -> list[ObservationFile]:
    """An observation's file rows: the document's `files`, else from files_read/modified
    made relative to the session's project root the way the gate looks them up."""
    files = data.get("files")
    if files is None:
        files = [{"path": p, "role": ObservationFile.Role.READ} for p in observation.files_read]
        files += [
            {"path": p, "role": ObservationFile.Role.MODIFIED} for p in observation.files_modified
        ]
        for f in files:
            f["path"] = relative_path(str(f["path"]), session.project_root)
    return [
        ObservationFile(
            observation=observation,
            project=session.project,
            path=str(f["path"]),
            role=f.get("role") or ObservationFile.Role.READ,
            content_hash=f.get("content_hash") or "",
            created=time_import(f["created"]) if f.get("created") else observation.created,
        )
        for f in files
    ]


def _summaries_bulk(
    sessions: list[tuple[Session, dict[str, Any]]], pks: list[int], report: ImportReport
) -> None:
    _children_bulk(
        Summary, "summaries", "summary", "request", _SUMMARY_FIELDS, sessions, pks, report
    )


def _ledger_bulk(
    sessions: list[tuple[Session, dict[str, Any]]], pks: list[int], report: ImportReport
) -> None:
    _children_bulk(
        LedgerEntry, "ledger", "ledger entry", "kind", _LEDGER_FIELDS, sessions, pks, report
    )


def _children_bulk(
    model: type[Summary] | type[LedgerEntry],
    key: str,
    label: str,
    identity: str,
    names: tuple[str, ...],
    sessions: list[tuple[Session, dict[str, Any]]],
    pks: list[int],
    report: ImportReport,
) -> None:
    """A batch's summaries or ledger entries (document key `key`): one read of what these
    sessions already hold, a row being the same when its session, time and `identity`
    field are; the new ones in one insert."""
    seen = set(
        model.objects.filter(session_id__in=pks).values_list("session_id", "created", identity)
    )
    known_gids = _stored_gids(model, [item for _, data in sessions for item in data.get(key) or []])
    new = []
    for session, data in sessions:
        for item in data.get(key) or []:
            created = time_import(item.get("created"))
            fields = {f: item[f] for f in names if f in item and item[f] is not None}
            if hasattr(model, "gid"):
                fields = _with_gid(fields, item)
            row_key = (session.pk, created, fields.get(identity) or "")
            if row_key in seen or fields.get("gid") in known_gids:
                report.add(label, created=False)
                continue
            seen.add(row_key)
            new.append(model(session=session, project=session.project, created=created, **fields))
            report.add(label, created=True)
    _fresh_gids(model, new)
    insert_rows(model, new)


def _fresh_gids(model: type[Any], rows: list[Any]) -> None:
    """Keep each row's global id from the document unless another stored row (or an earlier
    row of this batch) has it: then the row is a different one, and gets a new id."""
    if not hasattr(model, "gid") or not rows:
        return
    taken = set(model.objects.filter(gid__in=[r.gid for r in rows]).values_list("gid", flat=True))
    for row in rows:
        if row.gid in taken:
            row.gid = global_ids.new_gid()
        taken.add(row.gid)


def _stored_gids(model: type[Any], items: list[dict[str, Any]]) -> set[str]:
    """The global ids among `items` that a stored row of `model` already has."""
    if not hasattr(model, "gid"):
        return set()
    wanted = [i["gid"] for i in items if isinstance(i, dict) and global_ids.is_gid(i.get("gid"))]
    return set(model.objects.filter(gid__in=wanted).values_list("gid", flat=True))


def _with_gid(fields: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """`fields` plus the document's global id, when it has the form of one."""
    return fields | {"gid": data["gid"]} if global_ids.is_gid(data.get("gid")) else fields


def _session_import(data: dict[str, Any], report: ImportReport) -> Session:
    (platform, session_id), defaults = _session_key(data)
    if Session.objects.filter(gid=defaults.get("gid", "")).exists():
        defaults.pop("gid")
    session, created = Session.objects.get_or_create(
        platform=platform, session_id=session_id, defaults=defaults
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
    fields = _with_gid(fields, data)
    if "gid" in fields and Observation.objects.filter(gid=fields["gid"]).exists():
        return None
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
    ObservationFile.objects.bulk_create(_observation_files(observation, session, data))
    return observation


def _summary_import(session: Session, data: dict[str, Any]) -> bool:
    created = time_import(data.get("created"))
    if session.summaries.filter(created=created, request=data.get("request") or "").exists():
        return False
    fields = _with_gid(
        {f: data[f] for f in _SUMMARY_FIELDS if f in data and data[f] is not None}, data
    )
    if "gid" in fields and Summary.objects.filter(gid=fields["gid"]).exists():
        return False
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
