"""Revisions: every curation of an observation, with the fields before and after it.

A revision is what makes a change reversible (`revision_undo` puts `before` back) and what
the pages show as a row's history. Redaction reaches into it: a redacting edit, like
`forget`, leaves no earlier version of the text anywhere.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from memory.curation.policy import CurationError, CurationNotFound
from memory.models import ContextCache, Embedding, Observation, ObservationRevision
from memory.team import scope

# The fields a revision records and an undo restores.
TRACKED = (
    "title",
    "subtitle",
    "narrative",
    "facts",
    "type",
    "status",
    "status_reason",
    "superseded_by_id",
    "pinned",
    "demoted",
    "scope",
    "topic",
    "certainty",
    "person_edited",
)
TEXT_FIELDS = ("title", "subtitle", "narrative", "facts")
REDACTED = "[removed by a redacting edit]"


def snapshot(row: Observation, fields: tuple[str, ...] = TRACKED) -> dict[str, Any]:
    return {name: getattr(row, name) for name in fields}


def revision_record(
    row: Observation,
    *,
    action: str,
    actor: str,
    before: dict[str, Any],
    reason: str = "",
    batch: str = "",
) -> ObservationRevision:
    """Store one change; `before` holds the changed fields' old values, `after` is read
    from the row as it is now."""
    return ObservationRevision.objects.create(
        observation=row,
        action=action,
        actor=actor,
        user_id=scope.writer_id(),
        reason=reason,
        before=before,
        after=snapshot(row, tuple(before) or TRACKED),
        batch=batch,
    )


def row_changed(row: Observation, *, text: bool) -> None:
    """What follows any change: the project's cached index is re-rendered, and a row whose
    text changed is embedded again by the background sweep."""
    ContextCache.invalidate(project=row.project)
    if row.scope == Observation.Scope.ALL:
        ContextCache.objects.all().delete()  # an all-projects memory is in every index
    if text:
        Embedding.objects.filter(kind="observation", object_id=row.pk).delete()


def text_purge(row: Observation) -> int:
    """Every earlier version of the row's text replaced (a secret pasted into a memory must
    be removable): returns how many revisions were rewritten."""
    changed = 0
    for revision in ObservationRevision.objects.filter(observation=row):
        before = {k: _purged(k, v) for k, v in revision.before.items()}
        after = {k: _purged(k, v) for k, v in revision.after.items()}
        if (before, after) != (revision.before, revision.after):
            revision.before, revision.after = before, after
            revision.save(update_fields=["before", "after"])
            changed += 1
    return changed


def _purged(name: str, value: Any) -> Any:
    if name not in TEXT_FIELDS:
        return value
    return [REDACTED] if isinstance(value, list) and value else REDACTED if value else value


def history_of(row: Observation) -> list[ObservationRevision]:
    return list(row.revisions.select_related("user").order_by("created", "pk"))


def stamp_edited(row: Observation) -> None:
    row.edited = timezone.now()


def observation_visible(obs_id: object) -> Observation:
    """The row `obs_id` names, if this viewer may read it (no lock: for reading its history
    or filling an edit form); CurationError / CurationNotFound otherwise."""
    if isinstance(obs_id, bool) or not isinstance(obs_id, int) or not 0 < obs_id < 2**63:
        raise CurationError(f"observation ids are positive whole numbers, not {obs_id!r}")
    row = scope.owned(Observation.objects.filter(pk=obs_id)).first()
    if row is None:
        raise CurationNotFound(f"no observation #{obs_id}")
    return row
