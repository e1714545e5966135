"""The file-read gate (PreToolUse Read): show what memory knows about a file before the model
pays for reading it, and let the model pick the cheapest next step (docs/reference/source-rules.md).

Rules, cheapest checks first (the hot path must stay within a few milliseconds):
  pass   gate off, subagent, no path, explicit offset/limit, missing or small file,
         excluded project;
  pass   a retry of a read this session was refused once (an Edit can never deadlock:
         Claude Code's Edit needs a prior full Read, and the second Read always passes);
  pass   no current observations of the file (wrong, outdated, superseded, abandoned and
         retired rows are history, never shown as what memory knows now);
  mode   `adaptive` (the default) becomes `deny` or `context` by what this project's
         recent refusals led to (memory/briefing/gate_policy.py);
  deny   a re-read of a file this session already holds in full and unchanged;
  allow  + timeline as context, when the file changed since its newest observation
         (or always, in `context` mode);
  deny   with the timeline otherwise.
A plain pass answers `{}` (no permission decision: Claude Code's own permission rules
still apply); only advisory context is sent as an explicit allow.

Each row of the timeline carries its currency tags (`[agent-written]`, `[hypothesis]`, …);
a row of the file that was superseded by a current one is named on one line with its
successor, so the agent sees what replaced it rather than the old claim.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import FilteredRelation, Q, QuerySet

from memory import clock, config
from memory.agents.base import GateDecision, HookEvent, HookResult
from memory.agents.tool_names import tool_names
from memory.briefing import framing
from memory.briefing.file_views import (
    FileFacts,
    absolute_path,
    file_facts,
    session_ensure,
    view_matches,
)
from memory.briefing.gate_policy import adaptive_mode
from memory.briefing.refusal import refusal_menu, refusal_outline
from memory.ledger import file_tokens, ledger_insert, ledger_record_retry
from memory.models import (
    FileView,
    LedgerEntry,
    Observation,
    ObservationFile,
    Session,
    row_tags,
)
from memory.projects import (
    Project,
    is_excluded,
    is_excluded_path,
    project_for_cwd,
    relative_path,
    remote_request,
)
from memory.runtime.compiled_sql import CompiledInsert, CompiledQuery
from memory.team import scope, sharing
from memory.team.scope import Reach

# Rows fetched per file before dedupe for the file page and the by-file API: a file's whole
# history in practice, bounded for the rare file touched by thousands of observations.
FETCH_ROWS = 400
# The read gate's own slice (issue 33: a decision that does not grow with a file's history):
# the file's newest rows, and when it has more than that, its newest rows that modified it
# (the most specific kind, +2 in Candidate.score) from an index of their own. Two bounded
# index range reads, whatever the file's history; a file with at most GATE_NEWEST_ROWS rows
# (every file, in practice) is decided on its whole history as before.
GATE_NEWEST_ROWS = 64
GATE_MODIFIED_ROWS = 16
TITLE_MAX = 160
# Superseded rows of the file named with their successor, at most this many.
REPLACED_SHOWN = 3

MARKS = "[unchanged]/[changed]: the file now vs. what that observation saw.\n" + framing.NOTES_LINE
# Added to MARKS only when a row is [unknown], so the seed message stays as it is otherwise.
UNKNOWN_MARK = "[unknown]: no hash was recorded for it (imported history), so it may differ.\n"
CONTEXT_INTRO = """This file has prior observations; the Read result is the current file.
- Need details? {get}([IDs]) -- ~300 tokens each."""
CHANGED_INTRO = """This file changed since its last observation, so the Read goes ahead; the rows below describe earlier versions.
- Need details? {get}([IDs]) -- ~300 tokens each."""
REREAD = """Read blocked: you already read this whole file at {when} in this session, and it has not changed since: its content is earlier in this conversation.
- Need it again anyway (e.g. it is no longer in your context)? Read the file again: a second Read passes."""


@dataclass
class Candidate:
    """One observation of the file, merged over its read/modified rows."""

    id: int
    session: int
    title: str
    type: str
    created: datetime
    modified: bool
    content_hash: str
    files_touched: int
    unchanged: bool | None = None
    # Curation (memory/curation/): whether the row is still true, and who wrote it.
    status: str = "current"
    superseded_by: int | None = None
    certainty: str = ""
    origin: str = "observer"
    person_edited: bool = False

    @property
    def is_current(self) -> bool:
        return self.status == Observation.Status.CURRENT

    @property
    def uncertain(self) -> bool:
        """A hypothesis or a dead end: shown, but ranked below what is known."""
        return self.certainty in (Observation.Certainty.HYPOTHESIS, Observation.Certainty.DEAD_END)

    @property
    def tags(self) -> list[str]:
        return row_tags(self)

    @property
    def score(self) -> int:
        """Specificity (docs/reference/source-rules.md): modified +2; a focused observation +2
        (<=3 files) or +1 (4-8)."""
        score = 2 if self.modified else 0
        if self.files_touched <= 3:
            score += 2
        elif self.files_touched <= 8:
            score += 1
        return score


PASS = HookResult()


def gate_decide(*, event: HookEvent, mode: str = "") -> HookResult:
    """Decide one Read (see the module docstring for the rules, in order). `mode` overrides
    CLAUDE_MEM_READ_GATE (Codex shell reads have their own setting)."""
    settings = config.load()
    mode = (mode or config.read_gate(settings)).strip().lower()
    raw_path = event.tool_input.get("file_path")
    if (
        mode not in {"deny", "context", "adaptive"}
        or event.agent_id
        or not isinstance(raw_path, str)
        or not raw_path
    ):
        return PASS
    if event.tool_input.get("offset") is not None or event.tool_input.get("limit") is not None:
        return PASS
    path = absolute_path(raw_path, event.cwd)
    remote = _remote_facts(event, raw_path, path)
    facts = file_facts(path, remote=remote)
    if facts is None or facts.size < config.read_gate_min_bytes(settings):
        return PASS
    project = project_for_cwd(event.cwd, settings)
    if is_excluded(event.cwd, project, settings) or is_excluded_path(path, settings):
        return PASS
    session, view = _session_and_view(event, path)
    if view is not None and view.denied:
        _retry_pass(view, project)
        return PASS
    history = file_candidates(
        project=project.name, rel_path=relative_path(path, project.root), bounded=True
    )
    candidates = [c for c in history if c.is_current]
    if not candidates:
        return PASS
    if mode == "adaptive":
        mode = adaptive_mode(project=project.name, settings=settings).mode
    names = tool_names(platform=event.platform, route=config.install_route_setting(settings))
    facts = file_facts(path, remote=remote, with_hash=True) or facts
    zone = clock.local_zone(settings)
    now = clock.now_local(zone)
    if mode == "deny" and view is not None and not view.partial and view_matches(view, facts):
        reason = f"Current: {clock.stamp(now)}\n" + REREAD.format(
            when=clock.when_phrase(clock.to_local(view.seen, zone), now)
        )
        return _deny(event, project, path, facts, reason, session, view, detail="reread")
    for candidate in candidates:
        candidate.unchanged = candidate_unchanged(candidate, facts)
    newest_changed = candidates[0].unchanged is False
    rows = candidates_rank(candidates, config.read_gate_limit(settings))
    timeline = _timeline(rows, zone) + _replaced(history, rows)
    if mode == "context" or newest_changed:
        intro = (CHANGED_INTRO if newest_changed else CONTEXT_INTRO).format(
            get=names.get_observations
        )
        text = f"Current: {clock.stamp(now)}\n{intro}\n{_marks(rows)}\n\n{timeline}"
        session = session or session_ensure(event=event, project=project, absent=True)
        ledger_insert(
            kind=LedgerEntry.Kind.GATE_CONTEXT,
            session=session,
            project=project.name,
            path=path,
            shown=text,
        )
        return HookResult(gate=GateDecision(decision="allow", context=text))
    outline = refusal_outline(path, facts)
    menu = refusal_menu(raw_path=raw_path, names=names, outline=outline)
    reason = f"Current: {clock.stamp(now)}\n{menu}\n{_marks(rows)}\n\n{timeline}"
    if outline:
        reason += f"\n\n{outline}"
    return _deny(event, project, path, facts, reason, session, view)


_VIEW_INSERT = CompiledInsert(FileView)
VIEW_FIELDS = ("pk", "denied", "partial", "content_hash", "mtime", "size", "seen")


def _session_and_view(event: HookEvent, path: str) -> tuple[Session | None, FileView | None]:
    """The session and its view of this file in one query (a LEFT JOIN): the hot path."""
    row = _SESSION_VIEW.row(platform=event.platform, session_id=event.session_id, path=path)
    if row is None:
        return None, None
    pk, project, project_root, owner_id, *view_values = row
    # Another user's session id (guessed or copied): its views and ledger are not ours.
    scope.session_check(owner_id)
    session = Session(
        pk=pk,
        platform=event.platform,
        session_id=event.session_id,
        project=project,
        project_root=project_root,
        owner_id=owner_id,
    )
    session._state.adding = False  # a stored row, read raw: only its pk is ever written to
    session._state.db = connection.alias
    if view_values[0] is None:
        return session, None
    fields = dict(zip(VIEW_FIELDS, view_values, strict=True))
    fields.update(
        denied=bool(fields["denied"]), partial=bool(fields["partial"]), seen=_aware(fields["seen"])
    )
    return session, FileView(session=session, path=path, **fields)


# Built by the ORM once (see _CANDIDATES for why it then runs raw).
_SESSION_VIEW = CompiledQuery(
    lambda p: (
        Session.objects.filter(platform=p["platform"], session_id=p["session_id"])
        .annotate(view=FilteredRelation("file_views", condition=Q(file_views__path=p["path"])))
        .values_list(
            "pk", "project", "project_root", "owner_id", *(f"view__{name}" for name in VIEW_FIELDS)
        )[:1]
    ),
    "platform",
    "session_id",
    "path",
)


def _remote_facts(event: HookEvent, raw_path: str, path: str) -> dict[str, dict[str, Any]] | None:
    """Team mode: the hook client's facts, keyed by the path as the agent wrote it."""
    if not event.file_facts:
        return None
    found = event.file_facts.get(path) or event.file_facts.get(raw_path)
    return {path: found} if isinstance(found, dict) else None


def _retry_pass(view: FileView, project: Project) -> None:
    """The model asked again after a refusal: let it through, once, and book the refusal as overhead."""
    with transaction.atomic():
        FileView.objects.filter(pk=view.pk).update(denied=False)
        ledger_record_retry(session=view.session, project=project.name, path=view.path)


def file_candidates(*, project: str, rel_path: str, bounded: bool = False) -> list[Candidate]:
    """A file's observations, newest first, one entry per observation, whatever their
    status (the gate keeps the current ones; the file page lists them all, labelled).

    One indexed range read (obsfile_project_path_idx) joined to each observation by its
    primary key; the files an observation touched come from its files_read/files_modified.
    `bounded` (the read gate): at most GATE_NEWEST_ROWS + GATE_MODIFIED_ROWS rows, read
    through indexes whatever the file's history (see GATE_NEWEST_ROWS).
    """
    # A teammate's token: only observations of their own sessions and the projects shared
    # with them (memory/team/scope.py), filtered in the query so other users' rows never
    # crowd theirs out of the slice.
    owner = scope.readable_reach()
    if not bounded:
        rows = _rows(project=project, path=rel_path, owner=owner, count=FETCH_ROWS)
    else:
        rows = _rows(project=project, path=rel_path, owner=owner, count=GATE_NEWEST_ROWS)
        if len(rows) == GATE_NEWEST_ROWS:
            # More history than the newest slice: add the newest rows that modified the file
            # (older than the slice, or in it: a row met twice merges below). They come after
            # the newest rows, so the list stays newest first.
            rows += _rows(
                project=project,
                path=rel_path,
                owner=owner,
                count=GATE_MODIFIED_ROWS,
                role=ObservationFile.Role.MODIFIED,
            )
    merged: dict[int, Candidate] = {}
    for (
        obs_id, role, digest, created, session_pk, title, obs_type, read, written,
        status, superseded_by, certainty, origin, person_edited,
    ) in rows:  # fmt: skip
        modified = role == ObservationFile.Role.MODIFIED
        known = merged.get(obs_id)
        if known is not None:
            known.modified = known.modified or modified
            # The modified row's hash is the content the observation left behind.
            if modified and digest:
                known.content_hash = digest
            continue
        touched = len({*_paths(read), *_paths(written)}) or 1
        merged[obs_id] = Candidate(
            obs_id, session_pk, title, obs_type, _aware(created), modified, digest, touched,
            status=status, superseded_by=superseded_by, certainty=certainty, origin=origin,
            person_edited=bool(person_edited),
        )  # fmt: skip
    if owner is not None and owner.shared:
        _as_viewer_sees(merged)
    return list(merged.values())


def _as_viewer_sees(merged: dict[int, Candidate]) -> None:
    """Team mode: shared rows name their author, and the viewer's own correction of one
    (memory/team/sharing.py) sets its status as they see it."""
    names = sharing.row_authors(Observation, merged)
    for pk, overlay in sharing.overlays(merged).items():
        merged[pk].status = overlay.status
        merged[pk].title = overlay.title or merged[pk].title
    for pk, name in names.items():
        merged[pk].title = f"{merged[pk].title} (by {name})"


# The by-file query, built by the ORM once and then run on a plain cursor. Deliberately not
# a QuerySet per call: on the gate's hot path, building the query and converting 40-odd rows
# through the ORM doubled its CPU cost (~1.3 ms against ~0.55 ms at 100k observations).
def _candidates_query(
    *, project: str, path: str, owner: Reach | None = None, role: str = "", count: int = FETCH_ROWS
) -> QuerySet[Any]:
    rows = ObservationFile.objects.filter(project=project, path=path)
    if role:  # served by obsfile_path_role_idx: a file's rows of one role, newest first
        rows = rows.filter(role=role)
    if owner is not None:
        rows = rows.filter(owner.q("observation__session__owner"))
    return rows.order_by("-created").values_list(
        "observation_id",
        "role",
        "content_hash",
        "created",
        "observation__session_id",
        "observation__title",
        "observation__type",
        "observation__files_read",
        "observation__files_modified",
        "observation__status",
        "observation__superseded_by_id",
        "observation__certainty",
        "observation__origin",
        "observation__person_edited",
    )[:count]


# One compiled query per (role, count) the gate and the file page use: LIMIT is part of the
# SQL, and the role is a parameter only when filtered on.
def _newest(count: int) -> CompiledQuery:
    return CompiledQuery(
        lambda p: _candidates_query(project=p["project"], path=p["path"], count=count),
        "project",
        "path",
    )


_COMPILED = {("", count): _newest(count) for count in (FETCH_ROWS, GATE_NEWEST_ROWS)}
_COMPILED[(ObservationFile.Role.MODIFIED, GATE_MODIFIED_ROWS)] = CompiledQuery(
    lambda p: _candidates_query(
        project=p["project"], path=p["path"], role=p["role"], count=GATE_MODIFIED_ROWS
    ),
    "project",
    "path",
    "role",
)


def _rows(
    *, project: str, path: str, owner: Reach | None, count: int, role: str = ""
) -> list[tuple[Any, ...]]:
    """A file's ObservationFile rows (of `role`, if given) joined to their observations,
    newest first, at most `count`; a teammate's (`owner`) readable ones only."""
    if owner is not None:
        query = _candidates_query(project=project, path=path, owner=owner, role=role, count=count)
        return list(query)
    compiled = _COMPILED[(role, count)]
    if role:
        return compiled.rows(project=project, path=path, role=role)
    return compiled.rows(project=project, path=path)


def _paths(value: Any) -> list[str]:
    """A JSON list of paths; raw cursors return JSON columns as text."""
    if value == "[]":
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    return [p for p in value if isinstance(p, str)] if isinstance(value, list) else []


def _aware(value: datetime | str) -> datetime:
    """Raw cursors give SQLite datetimes as text (UTC) and PostgreSQL's as aware datetimes."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


# The content hash of imported history that recorded none (claude-mem stores no hashes):
# still evidence about the file, but whether the file changed since is unknown.
UNKNOWN_HASH = "unknown"


def _marks(rows: list[Candidate]) -> str:
    marks = UNKNOWN_MARK + MARKS if any(row.unchanged is None for row in rows) else MARKS
    if any(row.origin == Observation.Origin.AGENT for row in rows):
        marks += "\n" + framing.AGENT_NOTE
    return marks


def candidate_unchanged(candidate: Candidate, facts: FileFacts) -> bool | None:
    """Is the file still what this observation saw? Unchanged only by hash; None (shown
    `[unknown]`) when the capture stored no hash (imported history, a file unreadable at
    capture) and the file is older than the observation: an old mtime proves nothing (a
    checkout, `touch -d`, a copied tree), so it is never called unchanged."""
    if candidate.content_hash == UNKNOWN_HASH:
        return None
    if candidate.content_hash and facts.sha256:
        return candidate.content_hash == facts.sha256
    # Without a hash, a file modified after the observation has changed since; one older
    # than it may still differ (only a hash would say), so it is unknown.
    return False if facts.mtime > candidate.created.timestamp() else None


def candidates_rank(candidates: list[Candidate], limit: int) -> list[Candidate]:
    """One observation per session (its most specific, newest among equals), then the most
    specific first, a hypothesis or dead end after a row as specific that is not one,
    newest first among equals, at most `limit`."""
    order = sorted(candidates, key=lambda c: (-c.score, c.uncertain, -c.created.timestamp(), -c.id))
    best: dict[int, Candidate] = {}
    for candidate in order:
        best.setdefault(candidate.session, candidate)
    return list(best.values())[: max(limit, 0)]


@dataclass(frozen=True)
class FileRanking:
    """A file's observations as the gate ranks them, for the by-file API."""

    path: str  # project-relative
    total: int
    rows: list[Candidate]


def file_observations_ranked(*, path: str, project: str, limit: int) -> FileRanking:
    """A file's observations, ranked as the read gate ranks them. `path` is project-relative,
    or absolute (made relative to the project's known roots). With an absolute path on a
    local worker, each row says whether the file is still what the observation saw; a
    shared worker never reads files on its own disk on a caller's behalf."""
    rel = _project_relative(path, project)
    candidates = [c for c in file_candidates(project=project, rel_path=rel) if c.is_current]
    local = os.path.isabs(path) and not remote_request()
    facts = file_facts(path, with_hash=True) if local else None
    for candidate in candidates:
        candidate.unchanged = candidate_unchanged(candidate, facts) if facts else None
    return FileRanking(path=rel, total=len(candidates), rows=candidates_rank(candidates, limit))


def _project_relative(path: str, project: str) -> str:
    if not os.path.isabs(path):
        return path.replace(os.sep, "/")
    roots = (
        scope.owned(Session.objects.filter(project=project), "owner")
        .exclude(project_root="")
        .values_list("project_root", flat=True)
        .distinct()
    )
    for root in roots:
        rel = relative_path(path, root)
        if not os.path.isabs(rel):
            return rel
    return relative_path(path, "")


def change_label(unchanged: bool | None) -> str:
    """The gate's word for a row's file now: unchanged, changed, or unknown (no hash)."""
    return "unknown" if unchanged is None else ("unchanged" if unchanged else "changed")


def days_grouped(
    rows: list[Candidate], zone: tzinfo
) -> list[tuple[str, list[tuple[Candidate, datetime]]]]:
    """Rows grouped by local day, newest day first; within a day in rank order. The gate's
    text and the file page show the same grouping."""
    days: dict[str, list[tuple[Candidate, datetime]]] = {}
    keyed: list[tuple[datetime, str]] = []
    for row in rows:
        local = clock.to_local(row.created, zone)
        heading = clock.day_heading(local)
        if heading not in days:
            days[heading] = []
            keyed.append((local, heading))
        days[heading].append((row, local))
    keyed.sort(key=lambda item: item[0].date(), reverse=True)
    return [(heading, days[heading]) for _, heading in keyed]


def _timeline(rows: list[Candidate], zone: tzinfo) -> str:
    return "\n\n".join(
        f"### {heading}\n"
        + "\n".join(
            f"{row.id} {clock.clock_time(local)}  {framing.one_line(row.title, TITLE_MAX)}"
            f" [{change_label(row.unchanged)}]" + (f" [{', '.join(row.tags)}]" if row.tags else "")
            for row, local in rows_of_day
        )
        for heading, rows_of_day in days_grouped(rows, zone)
    )


def _replaced(history: list[Candidate], shown: list[Candidate]) -> str:
    """One line per superseded row of the file (newest first, at most REPLACED_SHOWN) whose
    successor is current and not in the timeline already: what the old row now reads as.
    Only on the deny/context path, so the pass path makes no extra read."""
    listed = {row.id for row in shown}
    old = [c for c in history if c.superseded_by is not None and c.superseded_by not in listed][
        :REPLACED_SHOWN
    ]
    if not old:
        return ""
    titles = dict(
        scope.owned(
            Observation.objects.filter(
                pk__in={c.superseded_by for c in old}, status=Observation.Status.CURRENT
            )
        ).values_list("pk", "title")
    )
    lines = [
        f"{c.id} was superseded by {c.superseded_by}: {framing.one_line(titles[c.superseded_by], TITLE_MAX)}"
        for c in old
        if c.superseded_by in titles
    ]
    return "\n\nReplaced:\n" + "\n".join(lines) if lines else ""


def _deny(
    event: HookEvent,
    project: Project,
    path: str,
    facts: FileFacts,
    reason: str,
    session: Session | None,
    view: FileView | None,
    detail: str = "",
) -> HookResult:
    """Refuse the read, remember the refusal (the next attempt passes), book the tokens."""
    try:
        with transaction.atomic():
            session = session or session_ensure(event=event, project=project, absent=True)
            if view is not None:
                FileView.objects.filter(pk=view.pk).update(denied=True)
            else:
                # No view yet: a row that holds only the refusal (partial: the model has no
                # full copy of the file).
                _VIEW_INSERT.insert(session_id=session.pk, path=path, denied=True, partial=True)
            ledger_insert(
                kind=LedgerEntry.Kind.GATE_DENY,
                session=session,
                project=project.name,
                path=path,
                shown=reason,
                avoided=file_tokens(facts.size),
                detail=detail,
            )
    except IntegrityError:
        # A parallel Read of the same file in this session was refused a moment ago: one
        # refusal is enough, let this one through.
        return PASS
    return HookResult(gate=GateDecision(decision="deny", reason=reason))
