"""Workflows that span models and are not big enough for a module of their own."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypedDict

from django.db.models import Exists, Max, OuterRef, Q

from memory import config, extensions
from memory.briefing.context import context_text
from memory.briefing.gate_policy import project_gate_mode
from memory.curation.history import history_of
from memory.curation.proposals import PREFIX as PROPOSAL_PREFIX
from memory.curation.proposals import open_proposals
from memory.hooks.spool import spool_backlog
from memory.models import (
    ContextCache,
    Event,
    Observation,
    ObservationRevision,
    Prompt,
    Session,
    Summary,
)
from memory.team import scope


def projects_list() -> list[str]:
    """Every project where something was captured, most recently active first.

    SessionStart creates its Session row (the ledger books the injection against it), so a
    session opened in a folder that is not a project (`/tmp`) exists with nothing in it: such
    a session names no project until a prompt or a tool use is stored there."""
    # Observations and summaries count too: importers store them without prompts or events.
    captured = (
        Q(prompt_counter__gt=0)
        | Q(Exists(Event.objects.filter(session=OuterRef("pk"))))
        | Q(Exists(Observation.objects.filter(session=OuterRef("pk"))))
        | Q(Exists(Summary.objects.filter(session=OuterRef("pk"))))
    )
    rows = (
        scope.owned(Session.objects.filter(captured), "owner")
        .values("project")
        .annotate(last=Max("started"))
        .order_by("-last")
    )
    return [r["project"] for r in rows]


class Stats(TypedDict):
    sessions: int
    prompts: int
    observations: int
    summaries: int
    deliverables: int
    pending: int


def stats_compute(*, project: str | None = None) -> Stats:
    """Counts for /api/stats; `pending` counts uncompressed events plus the spool backlog."""
    # A teammate's token counts only their own rows (memory/team/scope.py).
    sessions = scope.owned(Session.objects.all(), "owner")
    prompts = scope.owned(Prompt.objects.all())
    observations = scope.owned(Observation.objects.all())
    summaries = scope.owned(Summary.objects.all())
    events = scope.owned(Event.objects.pending())
    if project:
        sessions = sessions.filter(project=project)
        prompts = prompts.filter(session__project=project)
        observations = observations.filter(project=project)
        summaries = summaries.filter(project=project)
        events = events.filter(session__project=project)
    return {
        "sessions": sessions.count(),
        "prompts": prompts.count(),
        "observations": observations.count(),
        "summaries": summaries.count(),
        # Counted by the deliverables app, through the seam memory owns.
        "deliverables": extensions.session_part_count("deliverables", project=project),
        # The spool holds no project until ingested, so it counts toward every view.
        "pending": events.count() + (spool_backlog() if scope.restricted_owner() is None else 0),
    }


@dataclass
class TurnPart:
    """Another app's rows for one turn (memory.extensions.SessionPart) and how to show them."""

    name: str
    template: str
    items: list[Any]


@dataclass
class Turn:
    prompt: Prompt
    observations: list[Observation] = field(default_factory=list)
    summaries: list[Summary] = field(default_factory=list)
    parts: list[TurnPart] = field(default_factory=list)


@dataclass
class SessionTurns:
    """A session page: one turn per prompt, and what no prompt of the session claims."""

    turns: list[Turn]
    loose: list[Observation]
    loose_summaries: list[Summary]


def session_turns(*, session: Session) -> SessionTurns:
    """Group a session's observations and summaries (and other apps' rows) by prompt."""
    prompts = list(session.prompts.order_by("number"))
    observations = list(session.observations.order_by("created", "pk"))
    summaries = list(session.summaries.order_by("created", "pk"))
    parts = [(part, part.by_prompt(session)) for part in extensions.session_parts()]
    turns = [
        Turn(
            prompt=prompt,
            observations=[o for o in observations if o.prompt_number == prompt.number],
            summaries=[s for s in summaries if s.prompt_number == prompt.number],
            parts=[
                TurnPart(name=part.name, template=part.turn_template, items=by[prompt.pk])
                for part, by in parts
                if by.get(prompt.pk)
            ],
        )
        for prompt in prompts
    ]
    numbers = {p.number for p in prompts}
    return SessionTurns(
        turns=turns,
        loose=[o for o in observations if o.prompt_number not in numbers],
        loose_summaries=[s for s in summaries if s.prompt_number not in numbers],
    )


# Settings: what changing them invalidates, and the SessionStart preview


def context_caches_invalidate() -> None:
    """Settings changed: every project's index may render differently now."""
    projects = set(ContextCache.objects.values_list("project", flat=True))
    projects.update(Session.objects.values_list("project", flat=True).distinct())
    for project in sorted(projects):
        ContextCache.invalidate(project=project)


@dataclass
class ContextPreview:
    project: str
    text: str


def context_preview(*, project: str) -> ContextPreview:
    """The SessionStart text a new session of `project` would receive right now."""
    root = (
        scope.owned(Session.objects.filter(project=project), "owner")
        .exclude(project_root="")
        .order_by("-started")
        .values_list("project_root", flat=True)
        .first()
    )
    return ContextPreview(
        project=project, text=context_text(project=project, root=root or "", platform="claude-code")
    )


@dataclass(frozen=True)
class ProjectGate:
    project: str
    mode: str
    why: str


def gate_modes_list(*, project: str = "") -> list[ProjectGate]:
    """Which way the read gate leans in each project, and why (Stats, /api/gate/modes)."""
    settings = config.load()
    names = [project] if project else projects_list()
    return [
        ProjectGate(name, found.mode, found.why)
        for name in names
        for found in [project_gate_mode(project=name, settings=settings)]
    ]


# The observation page: its history, the agent's open proposals, what it replaced

# How each revision's action reads on the page ("a person marked it wrong").
ACTION_LABELS = {
    "remember": "wrote it",
    "edit": "edited it",
    "redact": "edited it and purged the old text",
    "wrong": "marked it wrong",
    "outdated": "marked it outdated",
    "supersede": "marked it superseded",
    "retire": "retired it",
    "restore": "restored it",
    "pin": "pinned it",
    "unpin": "unpinned it",
    "abandon": "marked it an abandoned hypothesis",
    "demote": "left it out of the index",
    "undo": "undid a change",
    "scope_all": "made it a memory of all projects",
    "propose_pin": "proposed pinning it",
    "propose_unpin": "proposed unpinning it",
    "propose_scope_all": "proposed it for all projects",
    # A Markdown import or sync (memory/travel/merge.py).
    "sync-update": "took a later version from an import",
    "sync-conflict": "kept this version over an earlier one from an import (shown as after)",
}
FIELD_LABELS = {
    "superseded_by_id": "superseded by",
    "status_reason": "reason",
    "person_edited": "by a person",
}


@dataclass(frozen=True)
class FieldChange:
    field: str
    before: str
    after: str


@dataclass
class RevisionLine:
    revision: ObservationRevision
    who: str
    what: str
    changes: list[FieldChange]
    undoable: bool
    # A proposal's `undone` is when it was answered, not an undo.
    is_proposal: bool


@dataclass
class ObservationCuration:
    history: list[RevisionLine]
    proposals: list[ObservationRevision]
    supersedes: list[Observation]


def observation_curation(*, observation: Observation) -> ObservationCuration:
    """What the observation page shows about the row's curation: every revision (who, what,
    before → after, whether it can still be undone), the agent's open proposals, and the
    rows this one replaced."""
    lines = [
        RevisionLine(
            revision=rev,
            who=_revision_who(rev),
            what=ACTION_LABELS.get(rev.action, rev.action.replace("_", " ")),
            changes=_field_changes(rev),
            is_proposal=rev.action.startswith(PROPOSAL_PREFIX),
            undoable=rev.undone is None
            and bool(rev.before)
            and not rev.action.startswith(PROPOSAL_PREFIX),
        )
        for rev in history_of(observation)
    ]
    return ObservationCuration(
        history=lines,
        proposals=open_proposals(observation),
        supersedes=list(observation.supersedes.order_by("created", "pk")),
    )


def _revision_who(revision: ObservationRevision) -> str:
    who = (
        str(ObservationRevision.Actor(revision.actor).label)
        if revision.actor in ObservationRevision.Actor.values
        else revision.actor
    )
    # Team mode: the user whose login or token made it (a staff member correcting a row).
    return f"{who} ({revision.user.get_username()})" if revision.user else who


def _field_changes(revision: ObservationRevision) -> list[FieldChange]:
    if not revision.before:
        return []  # written, or a proposal: nothing was there before
    return [
        FieldChange(
            field=FIELD_LABELS.get(name, name),
            before=_shown(name, old),
            after=_shown(name, revision.after.get(name)),
        )
        for name, old in revision.before.items()
        # "by a person" follows from who made the change, shown on the line already.
        if revision.after.get(name) != old and name != "person_edited"
    ]


def _shown(name: str, value: Any) -> str:
    if value is None or value == "" or value == []:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if name == "superseded_by_id":
        return f"#{value}"
    if isinstance(value, list):
        return "; ".join(str(v) for v in value)
    return str(value)
