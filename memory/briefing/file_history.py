"""Everything memory knows about one file, for the web app's file page.

The timeline is the read gate's own: the same candidates (`gate.file_candidates`), the same
ranking (`gate.candidates_rank`, one row per session, most specific first) and the same
[changed]/[unchanged]/[unknown] labels (`gate.candidate_unchanged`, by content hash), so the
page shows what the agent would be shown if it read the file now. Below it: every
observation of the file and every session that touched it (through an observation or a
read the gate recorded).

The file on disk is only hashed when it is safe to: a local worker (a shared team worker
never reads its own disk on a caller's behalf), a project-relative path that stays inside
one of the project's recorded roots after resolving links, a regular file, not a secret
location. Anything else is labelled the way the gate labels an unreadable file: unknown.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from datetime import datetime

from memory import clock, config
from memory.briefing.file_views import FileFacts, file_facts
from memory.briefing.gate import (
    Candidate,
    candidate_unchanged,
    candidates_rank,
    change_label,
    days_grouped,
    file_candidates,
)
from memory.models import FileView, Observation, ObservationFile, Prompt, Session
from memory.privacy.secret_locations import is_secret_location
from memory.protocol.netpolicy import is_loopback

# The page lists at most this many observations of a file (newest first); the gate's
# ranked timeline is bounded by CLAUDE_MEM_READ_GATE_LIMIT as in the hook.
OBSERVATIONS_MAX = 200
SESSIONS_MAX = 100


@dataclass(frozen=True)
class RankedRow:
    """One line of the gate's timeline: the observation and its label."""

    candidate: Candidate
    label: str  # "changed" | "unchanged" | "unknown"
    local: datetime


@dataclass(frozen=True)
class RankedDay:
    heading: str
    rows: list[RankedRow]


@dataclass
class TouchedSession:
    session: Session
    observations: int = 0
    modified: bool = False
    read_seen: datetime | None = None  # the newest read the gate recorded in it
    denied: bool = False
    first_prompt: str = ""  # what the session is called on the page


@dataclass
class FileHistory:
    project: str
    path: str  # as stored: project-relative inside the project, else absolute
    disk_path: str = ""  # the file hashed for the labels, "" when none could be
    disk_note: str = ""  # why there is no disk state, in one line
    exists: bool = False
    total: int = 0
    days: list[RankedDay] = field(default_factory=list)
    observations: list[Observation] = field(default_factory=list)
    sessions: list[TouchedSession] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    @property
    def known(self) -> bool:
        return bool(self.total or self.sessions)


def clean_rel_path(path: str) -> str:
    """The stored spelling of a path from a URL: forward slashes, no empty or `.` parts.
    `..` is kept (it only ever selects rows whose stored path is literally that); the disk
    lookup refuses it separately."""
    if "\x00" in path:  # no file name holds NUL, and PostgreSQL text cannot
        return ""
    path = path.replace("\\", "/").strip()
    absolute = path.startswith("/")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    out = "/".join(parts)
    return f"/{out}" if absolute else out


def _project_roots(project: str) -> list[str]:
    return list(
        Session.objects.filter(project=project)
        .exclude(project_root="")
        .order_by("-started")
        .values_list("project_root", flat=True)
        .distinct()[:20]
    )


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:
        return False


def _disk_file(rel: str, roots: list[str]) -> tuple[str, str]:
    """(absolute path, "") of the file to hash, or ("", why not)."""
    if not is_loopback(config.worker_host()):
        return "", "A shared worker does not read files on its own disk."
    if os.path.isabs(rel):
        return "", "Outside the project: its state on disk is not checked."
    if ".." in rel.split("/") or "\x00" in rel:
        return "", "Not a path inside the project."
    try:
        return _disk_file_in(rel, roots)
    except (OSError, ValueError):  # a name the OS cannot take (too long, odd bytes)
        return "", "Not a path this machine can open."


def _disk_file_in(rel: str, roots: list[str]) -> tuple[str, str]:
    for root in roots:
        candidate = os.path.normpath(os.path.join(root, rel))
        if not _inside(candidate, os.path.normpath(root)):
            continue
        real = os.path.realpath(candidate)
        if not _inside(real, os.path.realpath(root)) or is_secret_location(real):
            return "", "This path leaves the project or is a secret location; not read."
        try:
            st = os.lstat(candidate)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            return "", "Not a regular file; not read."
        return candidate, ""
    return "", "Not on this machine now (deleted, moved, or the project is elsewhere)."


def _ranked_days(rows: list[Candidate]) -> list[RankedDay]:
    return [
        RankedDay(
            heading, [RankedRow(row, change_label(row.unchanged), local) for row, local in day]
        )
        for heading, day in days_grouped(rows, clock.local_zone())
    ]


def _sessions(observations: list[Observation], views: list[FileView]) -> list[TouchedSession]:
    touched: dict[int, TouchedSession] = {}
    for obs in observations:
        entry = touched.setdefault(obs.session_id, TouchedSession(session=obs.session))
        entry.observations += 1
        entry.modified = entry.modified or bool(getattr(obs, "file_modified", False))
    for view in views:
        entry = touched.setdefault(view.session_id, TouchedSession(session=view.session))
        if entry.read_seen is None or view.seen > entry.read_seen:
            entry.read_seen = view.seen
        entry.denied = entry.denied or view.denied
    out = sorted(touched.values(), key=lambda t: t.session.started, reverse=True)[:SESSIONS_MAX]
    firsts = dict(
        Prompt.objects.filter(session_id__in=[t.session.pk for t in out])
        .order_by("session_id", "-number")
        .values_list("session_id", "text")
    )  # the last value per session wins: the lowest number, its first prompt
    for entry in out:
        entry.first_prompt = firsts.get(entry.session.pk, "")
    return out


def file_history(*, project: str, path: str) -> FileHistory:
    """What memory knows about `path` (as stored: project-relative, or absolute when the file
    is outside the project) in `project`."""
    rel = clean_rel_path(path)
    history = FileHistory(project=project, path=rel)
    if not rel:
        return history
    roots = _project_roots(project)
    disk, history.disk_note = _disk_file(rel, roots)
    facts: FileFacts | None = file_facts(disk, with_hash=True) if disk else None
    history.disk_path, history.exists = (disk, True) if facts else ("", False)
    candidates = file_candidates(project=project, rel_path=rel)
    for candidate in candidates:
        candidate.unchanged = candidate_unchanged(candidate, facts) if facts else None
    history.total = len(candidates)
    limit = config.read_gate_limit()
    # What the gate would show: the current rows only (the list below has them all, labelled).
    current = [c for c in candidates if c.is_current]
    history.days = _ranked_days(candidates_rank(current, limit))
    modified_ids = set(
        ObservationFile.objects.filter(
            project=project, path=rel, role=ObservationFile.Role.MODIFIED
        ).values_list("observation_id", flat=True)
    )
    ids = [c.id for c in candidates][:OBSERVATIONS_MAX]
    observations = list(
        Observation.objects.filter(pk__in=ids).select_related("session").order_by("-created", "-pk")
    )
    for obs in observations:
        obs.file_modified = obs.pk in modified_ids  # type: ignore[attr-defined]
    history.observations = observations
    # The gate records reads by the absolute path the agent named.
    absolute = [rel] if os.path.isabs(rel) else [os.path.join(root, rel) for root in roots]
    views = list(
        FileView.objects.filter(session__project=project, path__in=absolute).select_related(
            "session"
        )[:SESSIONS_MAX]
    )
    history.sessions = _sessions(observations, views)
    return history
