"""Storing a batch's observations: which tool uses each one covers, its share of the
tokens, its file rows, and the events marked done, all in one transaction guarded by the
claim's stamp."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from memory.compression import llm
from memory.compression.parse import ParsedObservation
from memory.compression.queue import store_guard
from memory.compression.tooluse import ToolUse
from memory.ledger import ledger_record_observer
from memory.models import ContextCache, Event, Observation, ObservationFile, Session
from memory.projects import relative_path


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


def root(session: Session) -> str:
    return session.project_root or session.cwd


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


def store_observations(
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
    root_dir = root(session)
    plans = [(obs, _covered(obs, uses, root_dir)) for obs in parsed]
    weights = [len(covered) for _, covered in plans]
    splits = [
        _split(n, weights) for n in (usage.input, usage.output, usage.cache_read, usage.cache_write)
    ]
    stored: list[Observation] = []
    sources: list[Any] = []  # Observation.events rows: which tool uses each one came from
    now = timezone.now()
    with transaction.atomic():
        store_guard(events, stamp)
        seen_hashes: set[str] = set()
        for i, (obs, covered) in enumerate(plans):
            modified = _union([*(u.modified_paths for u in covered), obs.evidence_modified])
            model_read = [relative_path(p, root_dir) for p in obs.files_read]
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
                certainty=obs.certainty,
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
                    for role, paths in (
                        (ObservationFile.Role.MODIFIED, modified),
                        # Gate evidence comes from the captured tool uses only, never from
                        # the model's say-so: a file the model lists in files_read but no
                        # tool use touched stays in the text and does not gate a Read.
                        (ObservationFile.Role.READ, [p for p in evidenced if p not in modified]),
                    )
                    for path in paths
                ]
            )
            sources += [
                Observation.events.through(observation_id=row.pk, event_id=pk)
                for pk in dict.fromkeys(u.event_pk for u in covered)
            ]
            stored.append(row)
        Observation.events.through.objects.bulk_create(sources)
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


def after_store(session: Session, *, stored_any: bool, usage: llm.Usage) -> None:
    if stored_any:
        ContextCache.invalidate(project=session.project)
    if usage.total:
        ledger_record_observer(session=session, project=session.project, usage=usage)
