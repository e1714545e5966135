"""Deleting old memory: observations, summaries and finished queue rows past an age."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from memory.models import ContextCache, Event, Observation, Summary

# Pending and claimed events are work not done yet: pruning never takes them.
FINISHED_EVENTS = [Event.Status.DONE, Event.Status.SKIPPED, Event.Status.FAILED]


@dataclass(frozen=True)
class PruneReport:
    cutoff: datetime
    project: str | None
    dry_run: bool
    observations: int
    summaries: int
    events: int
    projects: tuple[str, ...]  # the projects that lost (or would lose) rows

    @property
    def total(self) -> int:
        return self.observations + self.summaries + self.events

    def describe(self) -> str:
        verb = "Would delete" if self.dry_run else "Deleted"
        scope = f"project {self.project}" if self.project else "all projects"
        return (
            f"{verb} {self.observations} observations, {self.summaries} summaries and "
            f"{self.events} finished queue events created before "
            f"{self.cutoff:%Y-%m-%d %H:%M} UTC in {scope}."
        )


def observations_prune(*, older_than_days: int, project: str | None, dry_run: bool) -> PruneReport:
    """Delete memory older than `older_than_days` days, in one project or in all.

    1. Select observations and summaries created before the cutoff, and queue events that
       are finished (done, skipped, failed) and older than it; sessions, prompts and
       deliverables stay, so My Work and the session pages keep their history.
    2. With `dry_run`, only count.
    3. Otherwise delete in one transaction (the FTS5 triggers drop the index rows with
       them, ObservationFile rows go by cascade) and invalidate the SessionStart index of
       every touched project once the delete has committed.
    """
    if older_than_days < 0:
        raise ValueError("older_than_days must be 0 or more")
    cutoff = timezone.now() - timedelta(days=older_than_days)
    observations = Observation.objects.filter(created__lt=cutoff)
    summaries = Summary.objects.filter(created__lt=cutoff)
    events = Event.objects.filter(created__lt=cutoff, status__in=FINISHED_EVENTS)
    if project:
        observations = observations.filter(project=project)
        summaries = summaries.filter(project=project)
        events = events.filter(session__project=project)

    with transaction.atomic():
        touched = sorted(
            set(observations.values_list("project", flat=True).distinct())
            | set(summaries.values_list("project", flat=True).distinct())
        )
        counts = (observations.count(), summaries.count(), events.count())
        if not dry_run:
            observations.delete()
            summaries.delete()
            events.delete()
            for name in touched:
                transaction.on_commit(lambda name=name: ContextCache.invalidate(project=name))  # type: ignore[misc]
    return PruneReport(
        cutoff=cutoff,
        project=project or None,
        dry_run=dry_run,
        observations=counts[0],
        summaries=counts[1],
        events=counts[2],
        projects=tuple(touched),
    )
