"""What the agent asked for that only a person may grant: pinning (or unpinning) a memory,
widening it to all of the user's projects. The agent's request is a `propose_…` revision
on the row's history (corrections.py, remember.py); the user accepts or dismisses it on the
observation page.

A proposal is open while its `undone` is empty: answering it (either way) stamps it, so it
is offered once. Accepting applies the change as the user's own revision, which can be
undone like any other.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from memory.curation import history
from memory.curation.corrections import observation_mark
from memory.curation.policy import Actor, CurationError, CurationNotFound, observation_for_change
from memory.models import Observation, ObservationRevision
from memory.team import scope

PREFIX = "propose_"
# What each proposal kind becomes when accepted.
KINDS = ("pin", "unpin", "scope_all")


def open_proposals(row: Observation) -> list[ObservationRevision]:
    """The row's proposals no one has answered yet, oldest first."""
    return list(
        row.revisions.filter(action__startswith=PREFIX, undone__isnull=True).order_by(
            "created", "pk"
        )
    )


def proposal_accept(revision_id: object) -> Observation:
    """Grant the agent's proposal as the user: pin/unpin it, or make it a memory of all
    the user's projects. Returns the row as it is now."""
    with transaction.atomic():
        proposal = _open_proposal(revision_id)
        kind = proposal.action.removeprefix(PREFIX)
        reason = f"accepted the agent's proposal (revision #{proposal.pk})"
        if kind in {"pin", "unpin"}:
            row = observation_mark(
                proposal.observation_id, action=kind, actor=Actor.USER, reason=reason
            )
        else:
            row = _scope_all(proposal.observation_id, reason=reason)
        _answer(proposal)
    return row


def proposal_dismiss(revision_id: object) -> Observation:
    """Turn the agent's proposal down: nothing changes but the proposal, now answered."""
    with transaction.atomic():
        proposal = _open_proposal(revision_id)
        row = observation_for_change(proposal.observation_id)
        _answer(proposal)
    return row


def _open_proposal(revision_id: object) -> ObservationRevision:
    if isinstance(revision_id, bool) or not isinstance(revision_id, int) or revision_id <= 0:
        raise CurationError(f"revision ids are positive whole numbers, not {revision_id!r}")
    proposal = (
        scope.owned(
            ObservationRevision.objects.filter(pk=revision_id), "observation__session__owner"
        )
        .select_for_update()
        .first()
    )
    if proposal is None or not proposal.action.startswith(PREFIX):
        raise CurationNotFound(f"no proposal #{revision_id}")
    if proposal.action.removeprefix(PREFIX) not in KINDS:
        raise CurationError(f"proposal #{revision_id} ({proposal.action}) cannot be accepted here")
    if proposal.undone is not None:
        raise CurationError(f"proposal #{revision_id} was already answered")
    return proposal


def _answer(proposal: ObservationRevision) -> None:
    proposal.undone = timezone.now()
    proposal.save(update_fields=["undone"])


def _scope_all(obs_id: int, *, reason: str) -> Observation:
    row = observation_for_change(obs_id)
    if row.scope == Observation.Scope.ALL:
        return row
    before = history.snapshot(row, ("scope", "person_edited"))
    row.scope = Observation.Scope.ALL
    # A person decided it: from now on neither the agent nor consolidation may change it.
    row.person_edited = True
    changed = {k: v for k, v in before.items() if getattr(row, k) != v}
    history.stamp_edited(row)  # sync and the Markdown import merge by `edited`
    row.save(update_fields=[*changed, "edited"])
    history.revision_record(
        row, action="scope_all", actor=Actor.USER, before=changed, reason=reason
    )
    history.row_changed(row, text=False)
    return row
