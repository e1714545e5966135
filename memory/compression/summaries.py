"""Session summaries: one per Stop, from the prompt, the observations since the last
summary and the agent's last message; the model writes it, or the offline compressor."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from memory.compression import llm, offline, prompts
from memory.compression.observer import (
    MAX_API_ATTEMPTS,
    complete_with_repair,
    compressor_mode,
    observer_attempt,
)
from memory.compression.parse import ParsedSummary, parse_summary
from memory.compression.providers import OFFLINE
from memory.compression.queue import store_guard
from memory.compression.store import ProcessReport, after_store
from memory.models import Event, Observation, Prompt, Session, Summary


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
        attempt, usage, error = observer_attempt(
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
        store_guard(events, stamp)
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
    after_store(session, stored_any=summary is not None, usage=usage)
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
    return complete_with_repair(
        message,
        max_tokens=prompts.SUMMARY_MAX_TOKENS,
        summary=True,
        parse=lambda reply: parse_summary(reply.text),
    )
