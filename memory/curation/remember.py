"""`remember`: a memory written on purpose, by the agent (MCP) or by a person (CLI, page).

A `topic` makes it an upsert: the new text becomes the current memory and the previous one
is marked superseded by it (kept, with its history). The text is cleaned exactly as
captured text is (private parts stripped, secrets redacted). What the agent writes is
labelled as written by the agent wherever it is shown, goes to this project only, and never
replaces a memory a person wrote or corrected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from memory.curation import history
from memory.curation.policy import (
    FILES_MAX,
    TEXT_MAX,
    TITLE_MAX,
    TOPIC_MAX,
    Actor,
    CurationDenied,
    CurationError,
    person_owned,
)
from memory.models import Observation, ObservationFile, ObservationRevision, Session
from memory.privacy.redaction import Sanitizer
from memory.projects import relative_path
from memory.team import scope

KINDS = (*Observation.Type.values,)
_TOPIC_RE = re.compile(r"^[\w.:/ -]+$")
# The platform of the one session per project (and owner) that remembered memories hang on.
MEMORY_PLATFORM = "cmem"


@dataclass(frozen=True)
class RememberRequest:
    project: str
    title: str
    text: str = ""
    kind: str = Observation.Type.NOTE
    topic: str = ""
    files: tuple[str, ...] = ()
    scope: str = Observation.Scope.PROJECT
    actor: str = Actor.USER
    project_root: str = ""


@dataclass
class RememberResult:
    observation: Observation
    created: bool
    superseded: Observation | None = None
    # What the agent asked for that only the user may grant (pinning, all projects).
    proposals: list[str] = field(default_factory=list)


def remember(request: RememberRequest) -> RememberResult:
    title, text, topic, files = _checked(request)
    proposals: list[str] = []
    wide = request.scope == Observation.Scope.ALL
    if wide and request.actor == Actor.AGENT:
        proposals.append("scope_all")
        wide = False
    with transaction.atomic():
        previous = _topic_row(request.project, topic, request.actor) if topic else None
        if previous is not None and (previous.title, previous.narrative) == (title, text):
            return RememberResult(observation=previous, created=False)
        row = Observation(
            session=_memory_session(request.project, request.project_root),
            project=request.project,
            type=request.kind,
            title=title,
            narrative=text,
            files_read=files,
            tool_name="remember",
            compressor="remember",
            origin=Observation.Origin.AGENT
            if request.actor == Actor.AGENT
            else Observation.Origin.USER,
            person_edited=request.actor == Actor.USER,
            topic=topic,
            scope=Observation.Scope.ALL if wide else Observation.Scope.PROJECT,
            certainty=Observation.Certainty.CONFIRMED if request.actor == Actor.USER else "",
        )
        row.content_hash = row.compute_content_hash()
        same = Observation.objects.filter(
            session=row.session, content_hash=row.content_hash
        ).first()
        if same is not None:
            if not same.is_current:
                raise CurationError(
                    f"the same memory is #{same.pk}, which is {same.status}; restore it"
                )
            return RememberResult(observation=same, created=False)
        row.save()
        ObservationFile.objects.bulk_create(
            ObservationFile(
                observation=row,
                project=request.project,
                path=path,
                role=ObservationFile.Role.READ,
                created=row.created,
            )
            for path in files
        )
        history.revision_record(row, action="remember", actor=request.actor, before={})
        for proposal in proposals:
            ObservationRevision.objects.create(
                observation=row,
                action=f"propose_{proposal}",
                actor=Actor.AGENT,
                user_id=scope.writer_id(),
            )
        if previous is not None:
            before = history.snapshot(previous, ("status", "status_reason", "superseded_by_id"))
            previous.status = Observation.Status.SUPERSEDED
            previous.superseded_by = row
            previous.status_reason = f"replaced by #{row.pk} (topic {topic})"
            history.stamp_edited(previous)  # sync and the Markdown import merge by `edited`
            previous.save(update_fields=["status", "superseded_by", "status_reason", "edited"])
            history.revision_record(
                previous,
                action="supersede",
                actor=request.actor,
                before=before,
                reason=previous.status_reason,
            )
        history.row_changed(row, text=False)
    return RememberResult(observation=row, created=True, superseded=previous, proposals=proposals)


def _checked(request: RememberRequest) -> tuple[str, str, str, list[str]]:
    if request.actor not in Actor.values or request.actor == Actor.CONSOLIDATION:
        raise CurationError(f"memories are written by the agent or a person, not {request.actor!r}")
    if not request.project:
        raise CurationError("a memory belongs to a project (project)")
    if request.kind not in KINDS:
        raise CurationError(f"kind must be one of {', '.join(KINDS)}, not {request.kind!r}")
    if request.scope not in Observation.Scope.values:
        raise CurationError(f"scope is project or all, not {request.scope!r}")
    if len(request.title) > TITLE_MAX:
        raise CurationError(
            f"the title is at most {TITLE_MAX} characters ({len(request.title)} given)"
        )
    if len(request.text) > TEXT_MAX:
        raise CurationError(
            f"the text is at most {TEXT_MAX} characters ({len(request.text)} given)"
        )
    topic = request.topic.strip()
    if len(topic) > TOPIC_MAX or (topic and not _TOPIC_RE.match(topic)):
        raise CurationError(
            f"a topic is a short key (letters, digits, . : / - _ and spaces, at most {TOPIC_MAX})"
        )
    if len(request.files) > FILES_MAX:
        raise CurationError(f"at most {FILES_MAX} files")
    sanitizer = Sanitizer(cap=0)
    title = sanitizer.text(request.title).strip()
    text = sanitizer.text(request.text).strip()
    if not title:
        raise CurationError("a memory needs a title (none left once private parts are removed)")
    files = [
        relative_path(redacted, request.project_root) if request.project_root else redacted
        for redacted in (sanitizer.text(str(f)).strip() for f in request.files)
        if redacted
    ]
    return title, text, topic, list(dict.fromkeys(files))


def _topic_row(project: str, topic: str, actor: str) -> Observation | None:
    """The current memory of this topic, which the new one replaces; a topic whose latest
    memory was retired or marked wrong is refused (restore it, or choose another topic)."""
    # A topic is the writer's own key: staff read every row, but their topic never
    # replaces a teammate's memory (None: the local worker, whose rows have no owner).
    rows = Observation.objects.filter(
        project=project, topic=topic, session__owner_id=scope.writer_id()
    )
    latest = rows.select_for_update().order_by("-created", "-pk").first()
    if latest is None:
        return None
    if not latest.is_current:
        current = rows.filter(status=Observation.Status.CURRENT).order_by("-created", "-pk").first()
        if current is None:
            raise CurationError(
                f"topic {topic!r} belongs to #{latest.pk}, which is {latest.status}; restore it"
                " or remember under another topic"
            )
        latest = current
    if actor == Actor.AGENT and person_owned(latest):
        raise CurationDenied(
            f"topic {topic!r} is #{latest.pk}, written or corrected by a person; the agent cannot"
            " replace it (propose the change to the user instead)"
        )
    return latest


def _memory_session(project: str, root: str) -> Session:
    """The session remembered memories of a project hang on (one per owner)."""
    owner = scope.writer_id()
    session, _ = Session.objects.get_or_create(
        platform=MEMORY_PLATFORM,
        session_id=f"remembered:{owner or 'local'}:{project}",
        defaults={
            "project": project,
            "project_root": root,
            "owner_id": owner,
            "status": Session.Status.COMPLETED,
            "ended": timezone.now(),
        },
    )
    return session
