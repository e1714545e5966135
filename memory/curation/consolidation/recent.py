"""What the pass changed, newest first: the consolidation page's and the API's list."""

from __future__ import annotations

from django.db.models import QuerySet

from memory.models import ObservationRevision
from memory.team import scope

Actor = ObservationRevision.Actor
LIMIT_MAX = 500


def _visible() -> QuerySet[ObservationRevision]:
    return scope.owned(
        ObservationRevision.objects.filter(actor=Actor.CONSOLIDATION),
        "observation__session__owner",
    )


def consolidation_changes_include(revision_id: int) -> bool:
    """The revision is a consolidation change this viewer may see (the page undoes only those)."""
    return _visible().filter(pk=revision_id).exists()


def consolidation_changes(*, limit: int = 200, batch: str = "") -> list[ObservationRevision]:
    """The consolidation revisions the viewer may see (with their observation), newest first."""
    rows = _visible()
    if batch:
        rows = rows.filter(batch=batch)
    return list(
        rows.select_related("observation").order_by("-created", "-pk")[
            : max(1, min(limit, LIMIT_MAX))
        ]
    )
