"""Compression: claim a session's queued events, compress them, store, mark them done.

Exactly once, whatever dies when:
- Claiming is one write transaction (SQLite `BEGIN IMMEDIATE`; PostgreSQL `SELECT … FOR
  UPDATE SKIP LOCKED`), so two consumers never hold the same event. The claim stamps
  `claimed_at` and counts an attempt.
- The model is called outside any transaction; nothing is written while it thinks.
- Observations, their file rows and the events' `done` are written in ONE transaction that
  first checks the events still carry this claim's stamp. A consumer killed mid-batch
  leaves its events `claimed`; `events_reclaim_stale` hands them back after
  CLAUDE_MEM_CLAIM_TIMEOUT_SECONDS, and if the slow first consumer comes back after that,
  its stamp no longer matches and its result is dropped instead of stored twice.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from django.db import OperationalError

from memory import config
from memory.compression import llm, offline, prompts
from memory.compression.hash_evidence import hash_change_observations, prior_hashes
from memory.compression.observer import (  # noqa: F401 - re-exported: tasks, benchmarks, tests
    MAX_API_ATTEMPTS,
    MalformedReply,
    complete_blocks,
    complete_with_repair,
    compressor_mode,
    observer_attempt,
)
from memory.compression.parse import ParsedObservation, parse_observations
from memory.compression.providers import OFFLINE
from memory.compression.queue import (  # noqa: F401 - re-exported
    ClaimLost,
    events_claim,
    events_reclaim_stale,
    sessions_with_pending_events,
)
from memory.compression.store import ProcessReport, after_store, root, store_observations
from memory.compression.summaries import summary_compress
from memory.compression.tooluse import ToolUse, hash_changes
from memory.models import Event, Prompt, Session
from memory.runtime.foreground import quiet_wait

log = logging.getLogger(__name__)


def session_events_process(*, session_pk: int) -> ProcessReport:
    """Compress everything a session has queued.

    1. Observation events, oldest first, CLAUDE_MEM_BATCH_SIZE per request, until none is
       pending (events queued meanwhile are picked up by the same loop).
    2. Then summary events, one at a time, once no earlier observation of the session is
       still waiting (another consumer holding them will do the summary after them).
    """
    report = ProcessReport()
    session = Session.objects.filter(pk=session_pk).first()
    if session is None:
        return report
    batch_size = max(1, config.get_int("CLAUDE_MEM_BATCH_SIZE"))
    while True:
        quiet_wait()  # in the serving process, each batch lets the hooks in flight finish first
        events, stamp = events_claim(
            session_pk=session_pk, kind=Event.Kind.OBSERVATION, limit=batch_size
        )
        if not events:
            break
        report.add(_guarded(observations_compress, session=session, events=events, stamp=stamp))
    while True:
        first = (
            Event.objects.filter(
                session_id=session_pk, kind=Event.Kind.SUMMARY, status=Event.Status.PENDING
            )
            .order_by("created", "pk")
            .first()
        )
        if first is None:
            break
        earlier = Event.objects.filter(
            session_id=session_pk,
            kind=Event.Kind.OBSERVATION,
            status__in=[Event.Status.PENDING, Event.Status.CLAIMED],
            created__lte=first.created,
        )
        if earlier.exists():
            break
        events, stamp = events_claim(session_pk=session_pk, kind=Event.Kind.SUMMARY, limit=1)
        if not events:
            break
        report.add(_guarded(summary_compress, session=session, events=events, stamp=stamp))
    return report


def _guarded(fn: Any, *, session: Session, events: list[Event], stamp: Any) -> ProcessReport:
    """Run one compression step; a bug in it marks the events failed instead of looping forever."""
    try:
        return fn(session=session, events=events, stamp=stamp)
    except ClaimLost as exc:
        log.warning("%s", exc)
        return ProcessReport()
    except OperationalError:
        # A busy database (SQLite's lock held past busy_timeout under load) is not the batch's
        # fault: hand the events back and stop this run; the sweep re-enqueues the session.
        # (Marking them failed lost their compression for good under `python -m tests.bench load`.)
        log.warning("database busy while compressing events %s; will retry", [e.pk for e in events])
        # Still busy: then the claim expires (CLAUDE_MEM_CLAIM_TIMEOUT_SECONDS) instead.
        with contextlib.suppress(OperationalError):
            Event.objects.filter(
                pk__in=[e.pk for e in events], status=Event.Status.CLAIMED, claimed_at=stamp
            ).update(status=Event.Status.PENDING, claimed_at=None)
        raise
    except Exception as exc:  # keep the queue moving; the error is kept on the rows
        log.exception("compression of events %s failed", [e.pk for e in events])
        Event.objects.filter(
            pk__in=[e.pk for e in events], status=Event.Status.CLAIMED, claimed_at=stamp
        ).update(status=Event.Status.FAILED, last_error=llm.scrub(f"{type(exc).__name__}: {exc}"))
        return ProcessReport(events=len(events))


def _prompt_texts(session: Session, numbers: set[int | None]) -> dict[int, str]:
    wanted = {n for n in numbers if n is not None}
    rows = Prompt.objects.filter(session=session, number__in=wanted).values_list("number", "text")
    return dict(rows)


def observations_compress(*, session: Session, events: list[Event], stamp: Any) -> ProcessReport:
    """One batch: API (with one repair) or offline, then store everything in one transaction."""
    uses = [
        ToolUse.from_event(event, n=i + 1, root=root(session)) for i, event in enumerate(events)
    ]
    prior = prior_hashes(session, uses)
    unexplained = hash_changes(uses, prior)
    prompt_texts = _prompt_texts(session, {u.prompt_number for u in uses})
    mode, _why = compressor_mode()
    parsed: list[ParsedObservation] | None = None
    usage = llm.Usage()
    compressor = OFFLINE
    error = ""
    if mode == "api" and max(e.attempts for e in events) <= MAX_API_ATTEMPTS:
        result, usage, error = observer_attempt(
            lambda: _observations_via_api(session, uses, prompt_texts)
        )
        if result is not None:
            parsed, usage, compressor = result
    if parsed is None:
        parsed = offline.observations_for_batch(
            uses, prompts=prompt_texts, failed_before=_failed_before(session, events[0])
        )
    # What the hashes prove is added whichever compressor ran: evidence, not a model's word.
    parsed = parsed + hash_change_observations(session, uses, unexplained, root=root(session))
    stored = store_observations(
        session=session,
        events=events,
        stamp=stamp,
        uses=uses,
        parsed=parsed,
        usage=usage,
        compressor=compressor,
        error=error,
    )
    after_store(session, stored_any=bool(stored), usage=usage)
    return ProcessReport(events=len(events), observations=len(stored), tokens=usage.total)


def _observations_via_api(
    session: Session, uses: list[ToolUse], prompt_texts: dict[int, str]
) -> tuple[list[ParsedObservation], llm.Usage, str]:
    message = prompts.render_batch(
        project=session.project, uses=uses, prompts=prompt_texts, caps=prompts.Caps.from_settings()
    )
    return complete_with_repair(
        message,
        max_tokens=prompts.OBSERVATION_MAX_TOKENS,
        summary=False,
        parse=lambda reply: parse_observations(complete_blocks(reply)),
    )


def _failed_before(session: Session, first: Event) -> bool:
    """Did a tool use of the same prompt fail just before this batch? (offline bugfix hint)"""
    earlier = Event.objects.filter(
        session=session,
        kind=Event.Kind.OBSERVATION,
        prompt_number=first.prompt_number,
        created__lt=first.created,
    ).order_by("-created")[:10]
    for event in earlier:
        use = ToolUse.from_event(event, n=0, root=root(session))
        if use.modified_paths:
            return False
        if use.failed:
            return True
    return False
