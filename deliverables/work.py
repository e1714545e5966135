"""My Work: one card per prompt with what it produced (observations, the summary, the
deliverables and the files changed), grouped by day and project, a page at a time."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Exists, Max, OuterRef, Q
from django.utils import timezone

from deliverables.models import Deliverable
from deliverables.services import (
    IMAGE_TYPES,
    DeliverableMissing,
    deliverable_preview_kind,
    deliverable_read_text,
    markdown_to_safe_html,
)
from memory.dashboard.feed import date_filter
from memory.models import Event, Observation, Prompt, Session, Summary

WORK_PAGE_SIZE = 20

# The kinds My Work previews deliverables as (deliverable_preview_kind), plus the rest.
DELIVERABLE_KINDS = [
    ("markdown", "Markdown"),
    ("html", "HTML pages"),
    ("image", "Images"),
    ("text", "Text and code"),
    ("other", "Other files (download only)"),
]
_TEXT_APPLICATION = ("application/json", "application/xml", "application/javascript")


def deliverable_kind_q(kind: str) -> Q:
    """The rows deliverable_preview_kind() would call `kind`, as a filter on the stored
    content type (set from the name when the file was copied)."""
    markdown = Q(content_type__startswith="text/markdown")
    html = Q(content_type__startswith="text/html") | Q(
        content_type__startswith="application/xhtml+xml"
    )
    image = Q(content_type__in=sorted(IMAGE_TYPES))
    text = Q(content_type__startswith="text/")
    for ctype in _TEXT_APPLICATION:
        text |= Q(content_type__startswith=ctype)
    text &= ~markdown & ~html
    by_kind = {"markdown": markdown, "html": html, "image": image, "text": text}
    if kind == "other":
        return ~(markdown | html | image | text)
    return by_kind.get(kind, Q())


@dataclass
class DeliverableView:
    deliverable: Deliverable
    kind: str  # markdown, html, image, text, '' (download only)
    text: str = ""
    html: str = ""
    truncated: bool = False
    missing: bool = False


@dataclass
class WorkCard:
    prompt: Prompt
    observations: list[Observation]
    summary: Summary | None
    deliverables: list[DeliverableView]
    files_changed: list[str]
    ended: datetime | None

    @property
    def session(self) -> Session:
        return self.prompt.session

    @property
    def duration(self) -> timedelta | None:
        if self.ended is None or self.ended < self.prompt.created:
            return None
        return self.ended - self.prompt.created


@dataclass
class WorkGroup:
    day: date
    project: str
    cards: list[WorkCard] = field(default_factory=list)


@dataclass
class WorkPage:
    page: Page[Any]
    groups: list[WorkGroup]


def deliverable_view(deliverable: Deliverable) -> DeliverableView:
    """What My Work shows of one deliverable: escaped text, sanitised Markdown, or a link."""
    kind = deliverable_preview_kind(deliverable=deliverable)
    view = DeliverableView(deliverable=deliverable, kind=kind)
    if kind in {"text", "markdown"}:
        try:
            text, view.truncated = deliverable_read_text(deliverable=deliverable)
        except (DeliverableMissing, OSError):
            view.missing = True
            return view
        if kind == "markdown":
            view.html = markdown_to_safe_html(text)
        else:
            view.text = text
    return view


def _files_changed(observations: list[Observation], deliverables: list[Deliverable]) -> list[str]:
    seen: dict[str, None] = {}
    for obs in observations:
        for path in obs.files_modified or []:
            if isinstance(path, str) and path:
                seen.setdefault(path, None)
    for d in deliverables:
        seen.setdefault(d.original_path, None)
    return list(seen)


def work_page(
    *,
    project: str = "",
    date_from: date | None = None,
    date_to: date | None = None,
    obs_type: str = "",
    deliverable_kind: str = "",
    page: int | str = 1,
) -> WorkPage:
    """My Work: one card per prompt with what it produced, grouped by day and project.

    Rows of a page are fetched in one query per kind (observations, summaries, events,
    deliverables) and bucketed by (session, prompt number) in Python.
    """
    prompts = Prompt.objects.select_related("session").order_by("-created", "-pk")
    if project:
        prompts = prompts.filter(session__project=project)
    prompts = date_filter(prompts, date_from=date_from, date_to=date_to)
    if obs_type:
        # Only the requests that produced an observation of this type, showing just those.
        prompts = prompts.filter(
            Exists(
                Observation.objects.filter(
                    session_id=OuterRef("session_id"),
                    prompt_number=OuterRef("number"),
                    type=obs_type,
                )
            )
        )
    kind_q = deliverable_kind_q(deliverable_kind) if deliverable_kind else Q()
    if deliverable_kind:
        # Only the requests that delivered a file of this kind, showing just those files.
        prompts = prompts.filter(
            Exists(Deliverable.objects.filter(kind_q, prompt_id=OuterRef("pk")))
        )
    page_obj = Paginator(prompts, WORK_PAGE_SIZE).get_page(page)
    page_prompts: list[Prompt] = list(page_obj.object_list)
    session_ids = {p.session_id for p in page_prompts}
    numbers = {p.number for p in page_prompts}

    obs_by: dict[tuple[int, int], list[Observation]] = defaultdict(list)
    observations_of_page = Observation.objects.filter(
        session_id__in=session_ids, prompt_number__in=numbers
    )
    if obs_type:
        observations_of_page = observations_of_page.filter(type=obs_type)
    for obs in observations_of_page.order_by("created", "pk"):
        obs_by[(obs.session_id, obs.prompt_number or 0)].append(obs)
    summary_by: dict[tuple[int, int], Summary] = {}
    for found in Summary.objects.filter(
        session_id__in=session_ids, prompt_number__in=numbers
    ).order_by("created", "pk"):
        summary_by[(found.session_id, found.prompt_number or 0)] = found  # the latest wins
    # The turn ended at its last captured hook (Stop included): observations are written
    # when compressed, possibly minutes later, so their time would overstate the work.
    ended_by = {
        (row["session_id"], row["prompt_number"]): row["last"]
        for row in Event.objects.filter(session_id__in=session_ids, prompt_number__in=numbers)
        .values("session_id", "prompt_number")
        .annotate(last=Max("created"))
    }
    deliverables_by: dict[int, list[Deliverable]] = defaultdict(list)
    for d in Deliverable.objects.filter(kind_q, prompt__in=page_prompts).order_by("created", "pk"):
        deliverables_by[d.prompt_id or 0].append(d)

    groups: list[WorkGroup] = []
    index: dict[tuple[date, str], WorkGroup] = {}
    for prompt in page_prompts:
        key = (prompt.session_id, prompt.number)
        observations = obs_by.get(key, [])
        summary = summary_by.get(key)
        delivered = deliverables_by.get(prompt.pk, [])
        ended = ended_by.get(key)
        if ended is None:
            times = [o.created for o in observations] + ([summary.created] if summary else [])
            ended = max(times) if times else None
        card = WorkCard(
            prompt=prompt,
            observations=observations,
            summary=summary,
            deliverables=[deliverable_view(d) for d in delivered],
            files_changed=_files_changed(observations, delivered),
            ended=ended,
        )
        group_key = (timezone.localdate(prompt.created), prompt.session.project)
        if group_key not in index:
            index[group_key] = WorkGroup(day=group_key[0], project=group_key[1])
            groups.append(index[group_key])
        index[group_key].cards.append(card)
    return WorkPage(page=page_obj, groups=groups)
