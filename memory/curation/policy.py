"""Who may change which memory, and the errors every curation interface maps to HTTP codes."""

from __future__ import annotations

from memory.models import Observation, ObservationRevision
from memory.team import scope

Actor = ObservationRevision.Actor

# Sizes a memory may have: larger input is refused with a clear error, never cut silently.
TITLE_MAX = 300
TEXT_MAX = 20_000
FACTS_MAX = 50
FACT_MAX = 2_000
TOPIC_MAX = 200
REASON_MAX = 2_000
FILES_MAX = 50


class CurationError(ValueError):
    """The request is malformed: it says what to change (HTTP 400)."""


class CurationDenied(PermissionError):
    """The actor may not make this change (HTTP 403)."""


class CurationNotFound(LookupError):
    """No such row, or not one this viewer may see (HTTP 404)."""


def actor_of(raw: str) -> str:
    if raw not in Actor.values:
        raise CurationError(f"actor must be one of {', '.join(Actor.values)}, not {raw!r}")
    return raw


def observation_for_change(obs_id: object, *, shared: bool = False) -> Observation:
    """The row `obs_id` names, if this viewer may change it (`shared`: or read it, a row
    shared with them, which the caller then corrects in their overlay only); locked for the
    change when the database can (PostgreSQL), so two corrections of one row apply one
    after the other."""
    if isinstance(obs_id, bool) or not isinstance(obs_id, int) or not 0 < obs_id < 2**63:
        raise CurationError(f"observation ids are positive whole numbers, not {obs_id!r}")
    narrow = scope.readable if shared else scope.owned
    rows = narrow(Observation.objects.filter(pk=obs_id)).select_for_update()
    row = rows.first()
    if row is None:
        raise CurationNotFound(f"no observation #{obs_id}")
    return row


def person_owned(row: Observation) -> bool:
    """A person wrote, edited, corrected or pinned it."""
    return row.person_edited or row.pinned or row.origin == Observation.Origin.USER


def check_may_change(row: Observation, actor: str) -> None:
    if actor != Actor.USER and person_owned(row):
        raise CurationDenied(
            f"#{row.pk} was written or corrected by a person; {Actor(actor).label} cannot change"
            " it (propose the change to the user instead)"
        )


def checked_reason(reason: str) -> str:
    if len(reason) > REASON_MAX:
        raise CurationError(f"a reason is at most {REASON_MAX} characters ({len(reason)} given)")
    return reason.strip()
