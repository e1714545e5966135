"""What the transcript importers (Claude Code, Codex) share: the `--since`/`--project` filter,
dates as transcripts write them, and storing a session with its prompts as live capture would.

Idempotent: a Prompt is unique per (session, number), so a second import adds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from django.utils import timezone

from memory.importers.bulk import insert_rows
from memory.importers.report import ImportReport
from memory.importers.sanitize import prompt_sanitize
from memory.models import Event, Prompt, Session
from memory.privacy import redaction
from memory.projects import Project, is_excluded


@dataclass
class ImportFilter:
    since: datetime | None = None
    project: str = ""


def timestamp_parse(value: Any) -> datetime | None:
    """An ISO time as transcripts write it ("Z" or an offset; naive means local), else None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else timezone.make_aware(parsed)


def since_parse(value: str) -> datetime:
    """`--since`: a date (midnight) or an ISO time."""
    parsed = timestamp_parse(value if "T" in value else f"{value}T00:00:00")
    if parsed is None:
        raise ValueError(f"--since: {value!r} is not a date (YYYY-MM-DD)")
    return parsed


def import_arguments(parser: Any, *, path_help: str) -> None:
    parser.add_argument("path", nargs="?", type=Path, help=path_help)
    parser.add_argument(
        "--since", type=since_parse, help="Only entries from this date on (YYYY-MM-DD or ISO time)."
    )
    parser.add_argument("--project", default="", help="Only sessions of this project.")


def import_options(options: dict[str, Any]) -> tuple[Path | None, ImportFilter]:
    """The PATH given (which must exist) and the `--since`/`--project` filter."""
    path: Path | None = options.get("path")
    if path is not None and not path.exists():
        raise ValueError(f"{path}: no such file or folder")
    return path, ImportFilter(since=options.get("since"), project=options.get("project") or "")


def session_filtered_out(
    *, cwd: str, project: Project, last: datetime | None, only: ImportFilter
) -> bool:
    """True when `only` leaves the session out, its project is excluded, or it ended before `since`."""
    return bool(
        (only.project and project.name != only.project)
        or is_excluded(cwd, project)
        or (only.since and last and last < only.since)
    )


def imported_session_get_or_create(
    *,
    platform: str,
    session_id: str,
    project: Project,
    cwd: str,
    transcript_path: str,
    first: datetime | None,
    last: datetime | None,
) -> tuple[Session, bool]:
    """The Session of an imported transcript, created completed and backdated to its first entry."""
    return Session.objects.get_or_create(
        platform=platform,
        session_id=session_id,
        defaults={
            "project": project.name,
            "project_root": project.root,
            "cwd": cwd,
            "transcript_path": transcript_path,
            "status": Session.Status.COMPLETED,
            "started": first or timezone.now(),
            "ended": last,
        },
    )


def imported_prompts_store(
    *,
    session: Session,
    prompts: list[tuple[str, datetime | None]],
    sanitizer: redaction.Sanitizer,
    report: ImportReport,
    since: datetime | None,
) -> set[int]:
    """Add each prompt not stored yet (numbered in transcript order, privacy applied; none
    older than `since`). Returns the numbers of private prompts, whose tool uses store nothing."""
    private: set[int] = set()
    # One query for the numbers stored and one insert for the new prompts, not one each.
    stored = set(Prompt.objects.filter(session=session).values_list("number", flat=True))
    new: list[Prompt] = []
    for number, (text, at) in enumerate(prompts, start=1):
        cleaned = prompt_sanitize(text, sanitizer)
        if cleaned is None:
            # A private (or protocol) prompt stores nothing, nor do its turn's tool uses.
            private.add(number)
            report.add("prompt", created=False)
            continue
        too_old = bool(since and at and at < since)
        if too_old or number in stored:
            report.add("prompt", created=False)
            continue
        new.append(
            Prompt(session=session, number=number, text=cleaned, created=at or timezone.now())
        )
        report.add("prompt", created=True)
    insert_rows(Prompt, new)
    if session.prompt_counter < len(prompts):
        session.prompt_counter = len(prompts)
        session.save(update_fields=["prompt_counter"])
    return private


def stored_tool_use_ids(session: Session) -> set[str]:
    """The tool uses the session already holds: an import checks against this set in
    memory, instead of one query per tool use."""
    return set(Event.objects.filter(session=session).values_list("tool_use_id", flat=True))
