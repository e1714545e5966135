"""Rows dated in the future, after the clock jumped back: brought back to the present.

Every row is stamped with the machine's clock when it is written. When that clock was hours
ahead and is then corrected (NTP after a suspend, a VM restored from a snapshot), the rows
written meanwhile carry future dates, and two things go wrong:

- the sweep picks pending events by `created <= now - 60 s` and claims are reclaimed by
  `claimed_at < now - timeout`, so future-dated work would sit untouched for hours;
- memory sorts by `created` descending, so the future-dated rows would be "newest" in every
  index and timeline until the real clock caught up with them.

`future_rows_repair` (run by every sweep) stamps such rows with the present instead. It
returns the sessions with pending or claimed events it repaired, so the sweep enqueues them
at once. Rows a little in the future (less than TOLERANCE, e.g. a write racing this query)
are left alone: they fall behind `now` by themselves within seconds.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from memory.models import (
    Event,
    FileView,
    LedgerEntry,
    Observation,
    ObservationFile,
    Prompt,
    Session,
    Summary,
)

log = logging.getLogger(__name__)

TOLERANCE = timedelta(seconds=5)


def future_rows_repair() -> list[int]:
    """Stamp future-dated rows with now; the sessions whose queued work was among them."""
    now = timezone.now()
    horizon = now + TOLERANCE
    repaired = 0
    with transaction.atomic():
        waiting = Event.objects.filter(
            status__in=[Event.Status.PENDING, Event.Status.CLAIMED], created__gt=horizon
        )
        sessions = set(waiting.values_list("session_id", flat=True))
        # A claim stamped in the future would never look stale: hand it back to the queue
        # (the store guard makes a late answer of the old consumer a no-op).
        stale_claims = Event.objects.filter(status=Event.Status.CLAIMED, claimed_at__gt=horizon)
        sessions.update(stale_claims.values_list("session_id", flat=True))
        repaired += stale_claims.update(status=Event.Status.PENDING, claimed_at=None)
        # An observation's file rows carry its own timestamp: found through it (an index
        # search), not by a scan of every file row each minute; before it is restamped.
        repaired += ObservationFile.objects.filter(observation__created__gt=horizon).update(
            created=now
        )
        for model in (Event, Prompt, Observation, Summary, LedgerEntry):
            repaired += model.objects.filter(created__gt=horizon).update(created=now)
        repaired += Session.objects.filter(started__gt=horizon).update(started=now)
        repaired += FileView.objects.filter(seen__gt=horizon).update(seen=now)
    if repaired:
        log.warning(
            "clock: %d row(s) were dated after %s (the clock jumped back); stamped with now",
            repaired,
            now.isoformat(timespec="seconds"),
        )
    return sorted(sessions)
