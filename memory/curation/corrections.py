"""Correcting a memory: mark it wrong, outdated or superseded, retire, restore, pin, edit,
undo. Each is one transaction that writes the row and its revision together.

The agent's pin and all-projects requests are proposals: recorded on the row's history for
the user to accept, never applied (a hostile file could otherwise make the agent pin an
instruction into every future session).
"""

from __future__ import annotations

from typing import Any, Literal

from django.db import transaction
from django.utils import timezone

from memory.curation import history
from memory.curation.policy import (
    FACT_MAX,
    FACTS_MAX,
    TEXT_MAX,
    TITLE_MAX,
    Actor,
    CurationDenied,
    CurationError,
    CurationNotFound,
    check_may_change,
    checked_reason,
    observation_for_change,
)
from memory.models import ContextCache, Observation, ObservationRevision
from memory.privacy.redaction import Sanitizer
from memory.team import scope

Status = Observation.Status
Action = Literal[
    "wrong", "outdated", "supersede", "retire", "restore", "pin", "unpin", "abandon", "demote"
]
ACTIONS: tuple[str, ...] = Action.__args__  # type: ignore[attr-defined]
_STATUS_OF = {
    "wrong": Status.WRONG,
    "outdated": Status.OUTDATED,
    "retire": Status.RETIRED,
    "abandon": Status.ABANDONED,
}
# What only a person does; the agent's request becomes a proposal on the row's history.
PERSON_ONLY = {"pin", "unpin"}
EDITABLE = ("title", "subtitle", "narrative", "facts", "type")
TYPES = set(Observation.Type.values)


def observation_mark(
    obs_id: object,
    *,
    action: str,
    actor: str,
    reason: str = "",
    superseded_by: object = None,
    batch: str = "",
) -> Observation:
    """Apply one curation action to the row (see ACTIONS) as `actor`."""
    if action not in ACTIONS:
        raise CurationError(f"action must be one of {', '.join(ACTIONS)}, not {action!r}")
    reason = checked_reason(reason)
    if action in {"wrong", "abandon"} and not reason and actor != Actor.CONSOLIDATION:
        raise CurationError(
            f"say why the memory is {'wrong' if action == 'wrong' else 'abandoned'} (reason)"
        )
    with transaction.atomic():
        row = observation_for_change(obs_id)
        if actor == Actor.AGENT and action in PERSON_ONLY:
            return _propose(row, action=action, reason=reason)
        check_may_change(row, actor)
        before = history.snapshot(row)
        if action == "pin" or action == "unpin":
            row.pinned = action == "pin"
        elif action == "demote":
            row.demoted = True
        elif action == "restore":
            row.status, row.status_reason, row.superseded_by = Status.CURRENT, "", None
            row.demoted = False
        elif action == "supersede":
            row.superseded_by = _successor(row, superseded_by)
            row.status, row.status_reason = Status.SUPERSEDED, reason
        else:
            row.status, row.status_reason, row.superseded_by = _STATUS_OF[action], reason, None
        if actor == Actor.USER and action not in PERSON_ONLY:
            # A person's pin protects the row through `pinned` itself (policy.person_owned)
            # and must not label it "corrected": its text is as the observer wrote it.
            row.person_edited = True
        changed = {k: v for k, v in before.items() if getattr(row, k) != v}
        if not changed:
            return row  # already so: nothing to record
        # Every change moves `edited`: sync and the Markdown import merge by it.
        history.stamp_edited(row)
        row.save(update_fields=[*(_column(k) for k in changed), "edited"])
        history.revision_record(
            row, action=action, actor=actor, before=changed, reason=reason, batch=batch
        )
        history.row_changed(row, text=False)
    return row


def _propose(row: Observation, *, action: str, reason: str) -> Observation:
    ObservationRevision.objects.create(
        observation=row,
        action=f"propose_{action}",
        actor=Actor.AGENT,
        user_id=scope.writer_id(),
        reason=reason,
        before={},
        after={},
    )
    return row


def _successor(row: Observation, raw: object) -> Observation:
    if raw is None:
        raise CurationError(
            "superseding needs the id of the memory that replaces it (superseded_by)"
        )
    try:
        target = observation_for_change(raw)
    except LookupError as exc:
        raise CurationError(f"superseded_by: {exc}") from exc
    if target.pk == row.pk:
        raise CurationError("a memory cannot supersede itself")
    if not target.is_current:
        raise CurationError(
            f"#{target.pk} is {target.status} itself; supersede by the current memory instead"
        )
    return target


def _column(field: str) -> str:
    return "superseded_by" if field == "superseded_by_id" else field


def observation_edit(
    obs_id: object,
    *,
    changes: dict[str, Any],
    actor: str,
    reason: str = "",
    redact: bool = False,
) -> Observation:
    """Change the row's text (title, subtitle, narrative, facts) or type. `redact`: the old
    text is purged from every earlier revision too, so it exists nowhere any more."""
    unknown = set(changes) - set(EDITABLE)
    if unknown:
        raise CurationError(
            f"only {', '.join(EDITABLE)} can be edited, not {', '.join(sorted(unknown))}"
        )
    if not changes:
        raise CurationError("nothing to change: give at least one of " + ", ".join(EDITABLE))
    reason = checked_reason(reason)
    cleaned = _cleaned(changes)
    with transaction.atomic():
        row = observation_for_change(obs_id)
        check_may_change(row, actor)
        before = history.snapshot(row, tuple(cleaned))
        for name, value in cleaned.items():
            setattr(row, name, value)
        changed = {k: v for k, v in before.items() if getattr(row, k) != v}
        if not changed and not redact:
            return row
        if actor == Actor.USER:
            changed.setdefault("person_edited", row.person_edited)
            row.person_edited = True
        history.stamp_edited(row)
        row.save(update_fields=[*map(_column, changed), "edited"])
        if redact:
            history.text_purge(row)
            changed = {k: history._purged(k, v) for k, v in changed.items()}
        history.revision_record(
            row,
            action="redact" if redact else "edit",
            actor=actor,
            before=changed,
            reason=reason,
        )
        history.row_changed(row, text=True)
    return row


def _cleaned(changes: dict[str, Any]) -> dict[str, Any]:
    """The edit as it will be stored: private parts stripped and secrets redacted, exactly
    as captured text; anything too large or of the wrong shape is refused."""
    sanitizer = Sanitizer(cap=0)
    out: dict[str, Any] = {}
    for name, value in changes.items():
        if name == "facts":
            if not isinstance(value, list) or not all(isinstance(f, str) for f in value):
                raise CurationError("facts is a list of strings")
            if len(value) > FACTS_MAX or any(len(f) > FACT_MAX for f in value):
                raise CurationError(f"at most {FACTS_MAX} facts of {FACT_MAX} characters each")
            out[name] = [t for t in (sanitizer.text(f).strip() for f in value) if t]
            continue
        if not isinstance(value, str):
            raise CurationError(f"{name} is a string")
        limit = TITLE_MAX if name == "title" else TEXT_MAX
        if len(value) > limit:
            raise CurationError(f"{name} is at most {limit} characters ({len(value)} given)")
        if name == "type":
            if value not in TYPES:
                raise CurationError(f"type must be one of {', '.join(sorted(TYPES))}")
            out[name] = value
            continue
        out[name] = sanitizer.text(value).strip()
        if name == "title" and not out[name]:
            raise CurationError("the title is empty (once private parts are removed)")
    return out


def revision_undo(revision_id: object, *, actor: str) -> Observation:
    """Put back what one revision changed. Undoing is itself a revision (so it can be
    undone too); a redacted text cannot come back."""
    if (
        isinstance(revision_id, bool)
        or not isinstance(revision_id, int)
        or not 0 < revision_id < 2**63  # a larger number names no row (SQLite overflows on it)
    ):
        raise CurationError(f"revision ids are positive whole numbers, not {revision_id!r}")
    with transaction.atomic():
        revision = (
            scope.owned(
                ObservationRevision.objects.filter(pk=revision_id),
                "observation__session__owner",
            )
            .select_related("observation")
            .first()
        )
        if revision is None:
            raise CurationNotFound(f"no revision #{revision_id}")
        if revision.undone:
            raise CurationError(f"revision #{revision_id} was already undone")
        if not revision.before:
            raise CurationError(
                f"revision #{revision_id} ({revision.action}) changed nothing to undo"
            )
        row = observation_for_change(revision.observation_id)
        if actor != Actor.USER and revision.actor == Actor.USER:
            raise CurationDenied("only a person undoes a person's change")
        check_may_change(row, actor)
        restorable = {k: v for k, v in revision.before.items() if k in history.TRACKED}
        if any(v == history.REDACTED or v == [history.REDACTED] for v in restorable.values()):
            restorable = {k: v for k, v in restorable.items() if k not in history.TEXT_FIELDS}
        before = history.snapshot(row, tuple(restorable))
        for name, value in restorable.items():
            setattr(row, name, value)
        if (
            restorable.get("superseded_by_id")
            and not Observation.objects.filter(pk=restorable["superseded_by_id"]).exists()
        ):
            row.superseded_by_id = None
        history.stamp_edited(row)  # an undo is a change too (sync merges by `edited`)
        row.save(update_fields=[*(_column(k) for k in restorable), "edited"])
        revision.undone = timezone.now()
        revision.save(update_fields=["undone"])
        history.revision_record(
            row,
            action="undo",
            actor=actor,
            before=before,
            reason=f"undo of revision #{revision.pk}",
        )
        history.row_changed(row, text=bool(set(restorable) & set(history.TEXT_FIELDS)))
        if "scope" in restorable:
            # Narrowed back from all projects: every other project's index still holds it.
            ContextCache.objects.all().delete()
    return row
