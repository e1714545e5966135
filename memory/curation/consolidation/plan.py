"""A pass's plan: the changes it means to make, and the rules every change obeys whoever
proposed it (the offline rules or the model): never a locked row (a person's or a pinned
one), never a row already changed in this pass, never a change a person undid before."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from memory.curation.consolidation.candidates import Row
from memory.models import ObservationRevision

Actor = ObservationRevision.Actor

# What the pass does to a row, as `observation_mark` actions.
SUPERSEDE = "supersede"
ABANDON = "abandon"
DEMOTE = "demote"
REASON_MAX = 300


@dataclass(frozen=True)
class Change:
    observation_id: int
    action: str  # supersede | abandon | demote
    reason: str
    title: str
    project: str
    superseded_by: int | None = None
    source: str = "rules"  # rules | model

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        return f"{self.action} #{self.observation_id} “{self.title[:80]}”: {self.reason}"


@dataclass
class Plan:
    """The changes of one window, in the order they apply."""

    project: str
    undone: set[tuple[int, str, int | None]] = field(default_factory=set)
    changes: list[Change] = field(default_factory=list)
    taken: set[int] = field(default_factory=set)  # rows this pass changes
    skipped: int = 0  # proposals refused by the rules above

    def propose(
        self,
        target: Row,
        *,
        action: str,
        reason: str,
        by: Row | None = None,
        source: str = "rules",
    ) -> bool:
        """Add the change if it may be made; False (and counted) when it may not."""
        by_id = by.id if by is not None else None
        if (
            target.locked
            or target.id in self.taken
            or (by is not None and (by.id in self.taken or by.id == target.id))
            or self.was_undone(target.id, action, by_id)
        ):
            self.skipped += 1
            return False
        self.taken.add(target.id)
        clean = " ".join(reason.split())[:REASON_MAX]
        self.changes.append(
            Change(
                observation_id=target.id,
                action=action,
                reason=clean,
                title=target.title,
                project=self.project,
                superseded_by=by_id if action == SUPERSEDE else None,
                source=source,
            )
        )
        return True

    def was_undone(self, obs_id: int, action: str, by: int | None) -> bool:
        """A person undid this very change before: the pass never makes it again (a fold
        into another row is a different change; a demotion or abandonment is the same)."""
        return (obs_id, action, by if action == SUPERSEDE else None) in self.undone


def undone_changes(ids: list[int]) -> set[tuple[int, str, int | None]]:
    """(row, action, successor) of every consolidation change to these rows that was undone."""
    found: set[tuple[int, str, int | None]] = set()
    if not ids:
        return found
    revisions = ObservationRevision.objects.filter(
        actor=Actor.CONSOLIDATION, undone__isnull=False, observation_id__in=ids
    ).values_list("observation_id", "action", "after")
    for obs_id, action, after in revisions.iterator():
        by = after.get("superseded_by_id") if action == SUPERSEDE else None
        found.add((obs_id, action, by if isinstance(by, int) else None))
    return found
