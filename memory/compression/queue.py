"""The compression queue: claim a session's events, hand stale claims back, check a claim.

Claiming is one write transaction (SQLite `BEGIN IMMEDIATE`; PostgreSQL `SELECT … FOR
UPDATE SKIP LOCKED`), so two consumers never hold the same event. The claim stamps
`claimed_at` and counts an attempt; the store checks the stamp (`store_guard`) before it
writes, so a consumer whose claim was handed to another drops its result.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from memory import config
from memory.models import Event

log = logging.getLogger(__name__)


class ClaimLost(Exception):
    """Our claim was reclaimed while the model was thinking; another consumer owns it now."""


def events_claim(*, session_pk: int, kind: str, limit: int) -> tuple[list[Event], Any]:
    """Atomically move up to `limit` pending events of a session to `claimed`."""
    stamp = timezone.now()
    with transaction.atomic():
        pending = Event.objects.filter(
            session_id=session_pk, kind=kind, status=Event.Status.PENDING
        ).order_by("created", "pk")
        if connection.features.has_select_for_update_skip_locked:
            pending = pending.select_for_update(skip_locked=True)
        ids = list(pending.values_list("pk", flat=True)[:limit])
        if not ids:
            return [], stamp
        Event.objects.filter(pk__in=ids, status=Event.Status.PENDING).update(
            status=Event.Status.CLAIMED, claimed_at=stamp, attempts=F("attempts") + 1
        )
        events = list(Event.objects.filter(pk__in=ids, claimed_at=stamp).order_by("created", "pk"))
    return events, stamp


def events_reclaim_stale(*, older_than_seconds: int | None = None) -> list[int]:
    """Hand claimed events whose consumer vanished back to the queue; returns their sessions."""
    if older_than_seconds is None:
        older_than_seconds = config.get_int("CLAUDE_MEM_CLAIM_TIMEOUT_SECONDS")
    cutoff = timezone.now() - timedelta(seconds=max(0, older_than_seconds))
    with transaction.atomic():
        stale = Event.objects.filter(status=Event.Status.CLAIMED, claimed_at__lt=cutoff)
        sessions = sorted(set(stale.values_list("session_id", flat=True)))
        count = stale.update(status=Event.Status.PENDING, claimed_at=None)
    if count:
        log.warning(
            "reclaimed %d event(s) of %d session(s) claimed before %s", count, len(sessions), cutoff
        )
    return sessions


def sessions_with_pending_events(*, older_than_seconds: int = 0) -> list[int]:
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    rows = Event.objects.filter(status=Event.Status.PENDING, created__lte=cutoff).values_list(
        "session_id", flat=True
    )
    return sorted(set(rows))


def store_guard(events: Sequence[Event], stamp: Any) -> None:
    """Inside the store transaction: fail unless every event still carries our claim."""
    ids = [e.pk for e in events]
    ours = Event.objects.filter(pk__in=ids, status=Event.Status.CLAIMED, claimed_at=stamp)
    if connection.features.has_select_for_update:
        ours = ours.select_for_update()
    if len(list(ours.values_list("pk", flat=True))) != len(ids):
        raise ClaimLost(f"events {ids} were reclaimed while compressing")
