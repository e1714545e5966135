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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import F
from django.utils import timezone

from memory import config
from memory.compression import health, llm, offline, prompts
from memory.compression.parse import (
    ParsedObservation,
    ParsedSummary,
    ParseError,
    parse_observations,
    parse_summary,
)
from memory.compression.tooluse import ToolUse
from memory.models import Event, Observation, ObservationFile, Prompt, Session, Summary
from memory.projects import relative_path

# What one observer answer parses into: observations, or a session summary.
_Parsed = TypeVar("_Parsed")

log = logging.getLogger(__name__)

# A batch claimed this many times was never finished (its consumer died each time, maybe
# because of the batch itself): compress it offline rather than call the API again.
MAX_API_ATTEMPTS = 3
OFFLINE = "offline"


@dataclass
class ProcessReport:
    events: int = 0
    observations: int = 0
    summaries: int = 0
    tokens: int = 0

    def add(self, other: ProcessReport) -> None:
        self.events += other.events
        self.observations += other.observations
        self.summaries += other.summaries
        self.tokens += other.tokens


class ClaimLost(Exception):
    """Our claim was reclaimed while the model was thinking; another consumer owns it now."""


class MalformedReply(Exception):
    def __init__(self, reason: str, usage: llm.Usage) -> None:
        super().__init__(reason)
        self.usage = usage


# -- mode -------------------------------------------------------------------------------------
def compressor_mode() -> tuple[str, str]:
    """('api' | 'offline', why). Offline when asked, with no key, with the budget spent, or
    for a minute after the API failed repeatedly."""
    setting = config.get("CLAUDE_MEM_COMPRESSOR").strip().lower()
    if setting == OFFLINE:
        return OFFLINE, "CLAUDE_MEM_COMPRESSOR=offline"
    if not llm.api_key():
        return OFFLINE, "no API key"
    if health.budget_spent():
        return OFFLINE, "daily token budget spent"
    if health.api_paused():
        return OFFLINE, "the API keeps failing; pausing before the next try"
    return "api", ""


# -- queue ------------------------------------------------------------------------------------
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


def _store_guard(events: Sequence[Event], stamp: Any) -> None:
    """Inside the store transaction: fail unless every event still carries our claim."""
    ids = [e.pk for e in events]
    ours = Event.objects.filter(pk__in=ids, status=Event.Status.CLAIMED, claimed_at=stamp)
    if connection.features.has_select_for_update:
        ours = ours.select_for_update()
    if len(list(ours.values_list("pk", flat=True))) != len(ids):
        raise ClaimLost(f"events {ids} were reclaimed while compressing")


# -- the service ------------------------------------------------------------------------------
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
        # (Marking them failed lost their compression for good under `cmem bench load`.)
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


def _root(session: Session) -> str:
    return session.project_root or session.cwd


def observations_compress(*, session: Session, events: list[Event], stamp: Any) -> ProcessReport:
    """One batch: API (with one repair) or offline, then store everything in one transaction."""
    uses = [
        ToolUse.from_event(event, n=i + 1, root=_root(session)) for i, event in enumerate(events)
    ]
    prompt_texts = _prompt_texts(session, {u.prompt_number for u in uses})
    mode, _why = compressor_mode()
    parsed: list[ParsedObservation] | None = None
    usage = llm.Usage()
    compressor = OFFLINE
    error = ""
    if mode == "api" and max(e.attempts for e in events) <= MAX_API_ATTEMPTS:
        result, usage, error = _observer_attempt(
            lambda: _observations_via_api(session, uses, prompt_texts)
        )
        if result is not None:
            parsed, usage, compressor = result
    if parsed is None:
        parsed = offline.observations_for_batch(
            uses, prompts=prompt_texts, failed_before=_failed_before(session, events[0])
        )
    stored = _store_observations(
        session=session,
        events=events,
        stamp=stamp,
        uses=uses,
        parsed=parsed,
        usage=usage,
        compressor=compressor,
        error=error,
    )
    _after_store(session, stored_any=bool(stored), tokens=usage.total)
    return ProcessReport(events=len(events), observations=len(stored), tokens=usage.total)


def _observations_via_api(
    session: Session, uses: list[ToolUse], prompt_texts: dict[int, str]
) -> tuple[list[ParsedObservation], llm.Usage, str]:
    message = prompts.render_batch(
        project=session.project, uses=uses, prompts=prompt_texts, caps=prompts.Caps.from_settings()
    )
    return _complete_with_repair(
        message,
        max_tokens=prompts.OBSERVATION_MAX_TOKENS,
        summary=False,
        parse=lambda reply: parse_observations(_complete_blocks(reply)),
    )


def _complete_with_repair(
    message: str,
    *,
    max_tokens: int,
    summary: bool,
    parse: Callable[[llm.LLMReply], _Parsed],
) -> tuple[_Parsed, llm.Usage, str]:
    """Ask the observer; an unparseable answer gets one repair request quoting the error.

    Returns (parsed, usage of both requests, model). Raises llm.LLMError when the first
    request fails, MalformedReply (carrying the usage spent) when the repair fails too."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": message}]
    reply = llm.complete(system=prompts.SYSTEM_PROMPT, messages=messages, max_tokens=max_tokens)
    try:
        return parse(reply), reply.usage, reply.model
    except ParseError as exc:
        reason = str(exc)
    messages += [
        {"role": "assistant", "content": reply.text.strip() or "(empty)"},
        {"role": "user", "content": prompts.repair_message(reason=reason, summary=summary)},
    ]
    try:
        second = llm.complete(
            system=prompts.SYSTEM_PROMPT, messages=messages, max_tokens=max_tokens
        )
    except llm.LLMError as exc:
        raise MalformedReply(f"{reason}; the repair request failed: {exc}", reply.usage) from None
    usage = _sum_usage(reply.usage, second.usage)
    try:
        return parse(second), usage, second.model
    except ParseError as exc:
        raise MalformedReply(str(exc), usage) from None


def _observer_attempt(
    call: Callable[[], tuple[_Parsed, llm.Usage, str]],
) -> tuple[tuple[_Parsed, llm.Usage, str] | None, llm.Usage, str]:
    """Run one observer API call and record its outcome for the health check.

    Returns (the call's result or None on failure, the usage to bill, the error or "")."""
    try:
        result = call()
    except llm.LLMError as exc:
        health.observer_record_failure(error=str(exc))
        return None, llm.Usage(), str(exc)
    except MalformedReply as exc:
        error = f"unusable model reply after one repair: {exc}"
        health.observer_record_failure(error=error, tokens=exc.usage.total)
        return None, exc.usage, error
    health.observer_record_success(tokens=result[1].total)
    return result, result[1], ""


def _complete_blocks(reply: llm.LLMReply) -> str:
    """An answer cut off at max_tokens keeps its finished observations; the torn one goes."""
    if reply.stop_reason != "max_tokens":
        return reply.text
    end = reply.text.rfind("</observation>")
    return reply.text[: end + len("</observation>")] if end >= 0 else reply.text


def _sum_usage(a: llm.Usage, b: llm.Usage) -> llm.Usage:
    return llm.Usage(
        a.input + b.input,
        a.output + b.output,
        a.cache_read + b.cache_read,
        a.cache_write + b.cache_write,
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
        use = ToolUse.from_event(event, n=0, root=_root(session))
        if use.modified_paths:
            return False
        if use.failed:
            return True
    return False


def _covered(obs: ParsedObservation, uses: list[ToolUse], root: str) -> list[ToolUse]:
    """The tool uses an observation is about: the ones it cites, else the ones whose files it
    names, else the whole batch."""
    by_n = {u.n: u for u in uses}
    cited = [by_n[n] for n in dict.fromkeys(obs.uses) if n in by_n]
    if cited:
        return cited
    named = {relative_path(p, root) for p in obs.files_read + obs.files_modified}
    matched = [u for u in uses if named & {*u.modified_paths, *u.read_paths, u.path}]
    return matched or list(uses)


def _split(total: int, weights: list[int]) -> list[int]:
    """`total` split by weight, whole numbers, largest remainder: the parts add up exactly."""
    if not weights:
        return []
    whole = sum(weights)
    shares = [total * w / whole for w in weights]
    parts = [int(s) for s in shares]
    for i in sorted(range(len(shares)), key=lambda i: shares[i] - parts[i], reverse=True)[
        : total - sum(parts)
    ]:
        parts[i] += 1
    return parts


def _store_observations(
    *,
    session: Session,
    events: list[Event],
    stamp: Any,
    uses: list[ToolUse],
    parsed: list[ParsedObservation],
    usage: llm.Usage,
    compressor: str,
    error: str,
) -> list[Observation]:
    root = _root(session)
    plans = [(obs, _covered(obs, uses, root)) for obs in parsed]
    weights = [len(covered) for _, covered in plans]
    splits = [
        _split(n, weights) for n in (usage.input, usage.output, usage.cache_read, usage.cache_write)
    ]
    stored: list[Observation] = []
    now = timezone.now()
    with transaction.atomic():
        _store_guard(events, stamp)
        seen_hashes: set[str] = set()
        for i, (obs, covered) in enumerate(plans):
            modified = _union(u.modified_paths for u in covered)
            model_read = [relative_path(p, root) for p in obs.files_read]
            evidenced = _union(u.read_paths for u in covered)
            read = _union([evidenced, model_read])
            row = Observation(
                session=session,
                project=session.project,
                type=obs.type,
                title=obs.title[:300],
                subtitle=obs.subtitle,
                facts=obs.facts,
                narrative=obs.narrative,
                concepts=obs.concepts,
                files_read=read,
                files_modified=modified,
                tool_name=covered[0].name if covered else "",
                prompt_number=covered[0].prompt_number if covered else None,
                compressor=compressor,
                input_tokens=splits[0][i],
                output_tokens=splits[1][i],
                cache_read_tokens=splits[2][i],
                cache_write_tokens=splits[3][i],
                created=min((u.created for u in covered if u.created), default=now),
            )
            row.content_hash = row.compute_content_hash()
            # Replays and a model repeating itself never store the same observation twice.
            if (
                row.content_hash in seen_hashes
                or Observation.objects.filter(
                    session=session, content_hash=row.content_hash
                ).exists()
            ):
                continue
            seen_hashes.add(row.content_hash)
            try:
                with transaction.atomic():  # a savepoint: another consumer may have just stored it
                    row.save()
            except IntegrityError:
                continue
            hashes: dict[str, str] = {}
            for use in covered:
                hashes.update(use.file_hashes())
            ObservationFile.objects.bulk_create(
                [
                    ObservationFile(
                        observation=row,
                        project=session.project,
                        path=path,
                        role=role,
                        content_hash=hashes.get(path, ""),
                        created=row.created,
                    )
                    # Gate evidence comes from the captured tool uses only, never from the
                    # model's say-so: a file the model lists in files_read but no tool use
                    # touched stays in the observation's text, and does not gate a Read.
                    for role, paths in (
                        (ObservationFile.Role.MODIFIED, modified),
                        (ObservationFile.Role.READ, [p for p in evidenced if p not in modified]),
                    )
                    for path in paths
                ]
            )
            stored.append(row)
        Event.objects.filter(pk__in=[e.pk for e in events]).update(
            status=Event.Status.DONE, done_at=now, last_error=error[:2000]
        )
    return stored


def _union(groups: Any) -> list[str]:
    out: dict[str, None] = {}
    for group in groups:
        for item in group:
            if item:
                out.setdefault(item, None)
    return list(out)


def _after_store(session: Session, *, stored_any: bool, tokens: int) -> None:
    # Imported here: these modules belong to other capabilities and may import the tasks.
    from memory.recall.context import context_cache_invalidate
    from memory.recall.ledger import ledger_record_observer

    if stored_any:
        context_cache_invalidate(project=session.project)
    if tokens:
        ledger_record_observer(session=session, project=session.project, tokens=tokens)


# -- summaries --------------------------------------------------------------------------------
def summary_compress(*, session: Session, events: list[Event], stamp: Any) -> ProcessReport:
    event = events[0]
    payload = event.payload if isinstance(event.payload, dict) else {}
    last_message = str(payload.get("last_assistant_message") or "")
    prompt = _summary_prompt(session, event)
    previous = (
        Summary.objects.filter(session=session, created__lt=event.created)
        .order_by("-created")
        .first()
    )
    observations = Observation.objects.filter(session=session, created__lte=event.created)
    if previous is not None:
        observations = observations.filter(created__gt=previous.created)
    rows = list(
        observations.order_by("created").values(
            "type", "title", "subtitle", "files_read", "files_modified"
        )[:200]
    )
    mode, _why = compressor_mode()
    usage = llm.Usage()
    compressor = OFFLINE
    error = ""
    parsed: ParsedSummary | None = None
    done = False
    if mode == "api" and event.attempts <= MAX_API_ATTEMPTS and (rows or last_message or prompt):
        attempt, usage, error = _observer_attempt(
            lambda: _summary_via_api(session, prompt, rows, last_message)
        )
        if attempt is not None:
            parsed, usage, compressor = attempt
            done = True
    if not done and (rows or last_message or prompt):
        parsed = offline.summary_for(request=prompt, observations=rows, last_message=last_message)
    now = timezone.now()
    summary = None
    with transaction.atomic():
        _store_guard(events, stamp)
        if parsed is not None:
            summary = Summary.objects.create(
                session=session,
                project=session.project,
                prompt_number=event.prompt_number,
                request=parsed.request,
                investigated=parsed.investigated,
                learned=parsed.learned,
                completed=parsed.completed,
                next_steps=parsed.next_steps,
                notes=parsed.notes,
                compressor=compressor,
                input_tokens=usage.input,
                output_tokens=usage.output,
                cache_read_tokens=usage.cache_read,
                cache_write_tokens=usage.cache_write,
                created=event.created,
            )
        Event.objects.filter(pk=event.pk).update(
            status=Event.Status.DONE, done_at=now, last_error=error[:2000]
        )
    _after_store(session, stored_any=summary is not None, tokens=usage.total)
    return ProcessReport(events=1, summaries=1 if summary else 0, tokens=usage.total)


def _summary_prompt(session: Session, event: Event) -> str:
    prompts_qs = Prompt.objects.filter(session=session)
    if event.prompt_number is not None:
        row = prompts_qs.filter(number=event.prompt_number).first()
        if row is not None:
            return row.text
    row = prompts_qs.order_by("-number").first()
    return row.text if row is not None else ""


def _summary_via_api(
    session: Session, prompt: str, rows: Sequence[Mapping[str, Any]], last_message: str
) -> tuple[ParsedSummary | None, llm.Usage, str]:
    lines = [
        f"[{r['type']}] {r['title']}"
        + (f" ({', '.join((r['files_modified'] or [])[:3])})" if r["files_modified"] else "")
        for r in rows
    ]
    message = prompts.render_summary_request(
        project=session.project, request=prompt, observations=lines, last_message=last_message
    )
    return _complete_with_repair(
        message,
        max_tokens=prompts.SUMMARY_MAX_TOKENS,
        summary=True,
        parse=lambda reply: parse_summary(reply.text),
    )
