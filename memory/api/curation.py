"""Curation endpoints: remember, mark (wrong, outdated, superseded, retired, pinned…), edit,
history and undo of a memory.

Thin handlers over memory.curation. Who acts comes from the `X-Cmem-Actor` header: the MCP
server sends `agent`; everything else (the CLI, the pages, any other client) is the user.
This is a label the tool surface sets, not an authentication: an agent with a shell runs as
the user, which is why the CLI detects the agent's shell itself (memory/management/commands/
_curation.py). Errors are `{"error": "..."}`: 400 a malformed request, 403 a change the
actor may not make, 404 a row this viewer cannot see (another user's, in team mode).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema, Status
from pydantic import Field

from memory.curation import corrections, history
from memory.curation.policy import (
    Actor,
    CurationDenied,
    CurationError,
    CurationNotFound,
)
from memory.curation.remember import RememberRequest, remember
from memory.models import Observation, ObservationRevision
from memory.projects import is_excluded, project_for_cwd

router = Router(tags=["curation"])

ACTOR_HEADER = "X-Cmem-Actor"
# What a caller may claim to be; consolidation is the worker's own pass, never a client.
CLIENT_ACTORS = (Actor.USER.value, Actor.AGENT.value)
_FAILURES = (CurationError, CurationDenied, CurationNotFound)


class ErrorOut(Schema):
    error: str


class MemoryOut(Schema):
    """A memory as it is now, with the labels every surface shows (`tags`)."""

    id: int
    gid: str = Field(description="The global id: the same on every machine and in every export.")
    project: str
    type: str
    title: str
    subtitle: str
    narrative: str
    facts: list[Any]
    files: list[Any] = Field(description="The files it is about (project-relative when known).")
    status: str = Field(
        description="current, wrong, outdated, superseded, abandoned or retired: only current rows are briefed as current."
    )
    status_reason: str
    superseded_by: int | None = Field(description="The memory that replaced it, if superseded.")
    pinned: bool = Field(description="Leads the SessionStart index (within a token budget).")
    demoted: bool = Field(description="Left out of the SessionStart index; still searchable.")
    origin: str = Field(description="observer, agent (agent-written) or user (written by you).")
    person_edited: bool = Field(
        description="A person wrote, edited or corrected it: the agent may not change it."
    )
    certainty: str
    topic: str
    scope: str = Field(description="project, or all (every project of its user).")
    tags: list[str] = Field(
        description='Labels such as "superseded by #12", "wrong", "agent-written", "corrected".'
    )
    created_at: datetime
    edited_at: datetime | None


def _memory(row: Observation) -> dict[str, Any]:
    return {
        "id": row.pk, "gid": row.gid, "project": row.project, "type": row.type, "title": row.title,
        "subtitle": row.subtitle, "narrative": row.narrative, "facts": row.facts,
        "files": list(dict.fromkeys([*row.files_read, *row.files_modified])),
        "status": row.status, "status_reason": row.status_reason,
        "superseded_by": row.superseded_by_id, "pinned": row.pinned, "demoted": row.demoted,
        "origin": row.origin, "person_edited": row.person_edited, "certainty": row.certainty,
        "topic": row.topic, "scope": row.scope, "tags": row.tags, "created_at": row.created,
        "edited_at": row.edited,
    }  # fmt: skip


def _actor(request: HttpRequest) -> str:
    raw = request.headers.get(ACTOR_HEADER)
    if raw is None:
        return Actor.USER
    if raw.strip().lower() not in CLIENT_ACTORS:
        raise CurationError(f"{ACTOR_HEADER} is agent or user, not {raw[:40]!r}")
    return raw.strip().lower()


def _failed(exc: Exception) -> Status[dict[str, Any]]:
    code = (
        403
        if isinstance(exc, CurationDenied)
        else 404
        if isinstance(exc, CurationNotFound)
        else 400
    )
    return Status(code, {"error": str(exc)})


def _last_revision(obs_id: int) -> int:
    """The newest revision id of the row (0: none): what a call added is what lies above it."""
    return (
        ObservationRevision.objects.filter(observation_id=obs_id)
        .order_by("-pk")
        .values_list("pk", flat=True)
        .first()
        or 0
    )


def _added(obs_id: int, since: int) -> ObservationRevision | None:
    return ObservationRevision.objects.filter(observation_id=obs_id, pk__gt=since).last()


_ANSWERS = {400: ErrorOut, 403: ErrorOut, 404: ErrorOut}


# --- remember ----------------------------------------------------------------------------


class RememberIn(Schema):
    """A memory written on purpose. Give `project` (its name) or `cwd` (a folder of it, from
    which the project is found as the hooks find it). With a `topic`, the new memory
    replaces the current one of that topic, which stays as history (superseded)."""

    title: str = Field(description="One line: what to remember (at most 300 characters).")
    text: str = Field("", description="The detail: why, the evidence, what it rules out.")
    kind: str = Field(
        "note",
        description="note, preference, decision, discovery, bugfix, feature, refactor, change, security_alert, security_note or sensitive.",
    )
    topic: str = Field(
        "", description="A short key (`db-choice`); remembering it again replaces the memory."
    )
    files: list[str] = Field(default_factory=list, description="Files it is about (at most 50).")
    scope: str = Field(
        "project",
        description="project, or all (every project of yours). From the agent, all is a proposal for the user.",
    )
    project: str = Field("", max_length=200, description="The project's name.")
    root: str = Field(
        "", description="The project's root folder: `files` under it are stored relative to it."
    )
    cwd: str = Field("", description="A folder of the project, when `project` is not given.")


class RememberOut(Schema):
    observation: MemoryOut
    created: bool = Field(description="False: the same memory existed, nothing changed.")
    superseded: int | None = Field(description="The memory of the same topic it replaced.")
    proposals: list[str] = Field(
        description="What was asked that only the user grants (`scope_all`), awaiting them."
    )


def _project(payload: RememberIn) -> tuple[str, str]:
    """(project, root) of the new memory."""
    if payload.project.strip():
        return payload.project.strip(), payload.root or payload.cwd
    if not payload.cwd.strip():
        raise CurationError("say which project: give project (its name) or cwd (a folder of it)")
    project = project_for_cwd(payload.cwd)
    # An excluded folder stores nothing captured; a memory written there is no different.
    if is_excluded(payload.cwd, project):
        raise CurationError(f"{payload.cwd} is excluded from memory (the admin's exclusions)")
    return project.name, payload.root or project.root


@router.post("/memories", response={201: RememberOut, 200: RememberOut, **_ANSWERS})
def remember_endpoint(request: HttpRequest, payload: RememberIn) -> Status[dict[str, Any]]:
    """Remember a decision, preference or conclusion: 201 with the new memory, 200 when the
    same memory already existed. On this and every curation endpoint, the header
    `X-Cmem-Actor: agent` (the MCP server sends it) makes the request the agent's; `user` or
    no header is the user's; any other value is a 400."""
    try:
        project, root = _project(payload)
        result = remember(RememberRequest(
            project=project, title=payload.title, text=payload.text, kind=payload.kind,
            topic=payload.topic, files=tuple(payload.files), scope=payload.scope,
            actor=_actor(request), project_root=root,
        ))  # fmt: skip
    except _FAILURES as exc:
        return _failed(exc)
    body = {
        "observation": _memory(result.observation),
        "created": result.created,
        "superseded": result.superseded.pk if result.superseded else None,
        "proposals": result.proposals,
    }
    return Status(201 if result.created else 200, body)


# --- mark and edit -------------------------------------------------------------------------


class MarkIn(Schema):
    """One curation of a memory. The agent's pin and unpin are proposals for the user."""

    action: str = Field(
        description="wrong (reason required), outdated, supersede (with superseded_by), retire, restore, pin or unpin."
    )
    reason: str = Field("", description="Why (at most 2,000 characters); shown in the history.")
    superseded_by: int | None = Field(
        None, description="With supersede: the id of the current memory that replaces this one."
    )


class ChangeOut(Schema):
    observation: MemoryOut
    changed: bool = Field(description="False: it was already so (or a proposal): nothing changed.")
    proposed: bool = Field(
        description="The request was recorded as a proposal for the user, not applied."
    )
    revision: int | None = Field(description="The revision recorded (undo it to reverse).")


def _change_body(row: Observation, added: ObservationRevision | None) -> dict[str, Any]:
    proposed = bool(added and added.action.startswith("propose_"))
    return {
        "observation": _memory(row),
        "changed": bool(added) and not proposed,
        "proposed": proposed,
        "revision": added.pk if added else None,
    }


# The actions a client may ask for; abandon and demote are the consolidation pass's.
MARK_ACTIONS = ("wrong", "outdated", "supersede", "retire", "restore", "pin", "unpin")


@router.post("/observations/{obs_id}/mark", response={200: ChangeOut, **_ANSWERS})
def mark_endpoint(request: HttpRequest, obs_id: int, payload: MarkIn) -> Status[dict[str, Any]]:
    """Mark a memory wrong, outdated or superseded, retire or restore it, pin or unpin it."""
    try:
        actor = _actor(request)
        if payload.action not in MARK_ACTIONS:
            raise CurationError(
                f"action is one of {', '.join(MARK_ACTIONS)}, not {payload.action!r}"
            )
        since = _last_revision(obs_id) if 0 < obs_id < 2**63 else 0
        row = corrections.observation_mark(
            obs_id, action=payload.action, actor=actor, reason=payload.reason,
            superseded_by=payload.superseded_by,
        )  # fmt: skip
    except _FAILURES as exc:
        return _failed(exc)
    return Status(200, _change_body(row, _added(row.pk, since)))


class EditIn(Schema):
    """The fields to change (omitted ones stay). Text is cleaned as captured text is:
    `<private>` parts removed, secrets redacted."""

    title: str | None = None
    subtitle: str | None = None
    narrative: str | None = None
    facts: list[str] | None = Field(None, description="The whole list of facts (replaces it).")
    type: str | None = Field(None, description="One of the observation types, note or preference.")
    reason: str = Field("", description="Why, shown in the history.")
    redact: bool = Field(
        False,
        description="Also purge the old text from every earlier revision (a pasted secret): it cannot be undone.",
    )


@router.patch("/observations/{obs_id}", response={200: ChangeOut, **_ANSWERS})
def edit_endpoint(request: HttpRequest, obs_id: int, payload: EditIn) -> Status[dict[str, Any]]:
    """Edit a memory's title, subtitle, narrative, facts or type."""
    changes = payload.dict(exclude={"reason", "redact"}, exclude_none=True)
    try:
        actor = _actor(request)
        since = _last_revision(obs_id) if 0 < obs_id < 2**63 else 0
        row = corrections.observation_edit(
            obs_id, changes=changes, actor=actor, reason=payload.reason, redact=payload.redact
        )
    except _FAILURES as exc:
        return _failed(exc)
    return Status(200, _change_body(row, _added(row.pk, since)))


# --- history and undo ----------------------------------------------------------------------


class RevisionOut(Schema):
    id: int
    action: str = Field(
        description="remember, edit, redact, wrong, supersede, pin, undo…; propose_* are the agent's requests awaiting the user."
    )
    actor: str = Field(description="user, agent or consolidation.")
    user: str | None = Field(description="Team mode: who made it (a staff correction names them).")
    reason: str
    before: dict[str, Any] = Field(description="The changed fields' values before.")
    after: dict[str, Any] = Field(description="The same fields after.")
    proposal: bool
    batch: str = Field(description="A consolidation pass's id, when it made the change.")
    created: datetime
    undone: datetime | None


class HistoryOut(Schema):
    observation: MemoryOut
    revisions: list[RevisionOut] = Field(description="Oldest first.")


def _revision(rev: ObservationRevision) -> dict[str, Any]:
    return {
        "id": rev.pk, "action": rev.action, "actor": rev.actor,
        "user": rev.user.get_username() if rev.user else None, "reason": rev.reason,
        "before": rev.before, "after": rev.after, "proposal": rev.action.startswith("propose_"),
        "batch": rev.batch, "created": rev.created, "undone": rev.undone,
    }  # fmt: skip


@router.get("/observations/{obs_id}/history", response={200: HistoryOut, **_ANSWERS})
def history_endpoint(request: HttpRequest, obs_id: int) -> Status[dict[str, Any]]:
    """Every change of a memory, who made it and why, with the agent's proposals."""
    try:
        row = history.observation_visible(obs_id)
    except _FAILURES as exc:
        return _failed(exc)
    revisions = [_revision(rev) for rev in history.history_of(row)]
    return Status(200, {"observation": _memory(row), "revisions": revisions})


class UndoOut(Schema):
    observation: MemoryOut
    revision: int = Field(description="The undo's own revision (undo it to redo).")


@router.post("/revisions/{revision_id}/undo", response={200: UndoOut, **_ANSWERS})
def undo_endpoint(request: HttpRequest, revision_id: int) -> Status[dict[str, Any]]:
    """Put back what one revision changed. Only a person undoes a person's change."""
    try:
        row = corrections.revision_undo(revision_id, actor=_actor(request))
    except _FAILURES as exc:
        return _failed(exc)
    return Status(200, {"observation": _memory(row), "revision": _last_revision(row.pk)})
