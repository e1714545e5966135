"""Rows for the consolidation tests: observations of one project, dated as asked."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from memory.models import Observation, ObservationFile
from tests.factories import SessionFactory


def session(project: str = "shop", **kwargs: Any) -> Any:
    return SessionFactory(project=project, **kwargs)


def obs(
    sess: Any,
    title: str,
    *,
    narrative: str = "",
    type: str = "discovery",
    files: tuple[str, ...] = (),
    days_ago: float = 0,
    **fields: Any,
) -> Observation:
    created = timezone.now() - timedelta(days=days_ago)
    row = Observation.objects.create(
        session=sess,
        project=sess.project,
        title=title,
        narrative=narrative,
        type=type,
        files_modified=list(files),
        created=created,
        **fields,
    )
    ObservationFile.objects.bulk_create(
        ObservationFile(
            observation=row, project=row.project, path=p, role="modified", created=created
        )
        for p in files
    )
    return row


def fresh(row: Observation) -> Observation:
    return Observation.objects.get(pk=row.pk)
