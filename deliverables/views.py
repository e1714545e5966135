"""My Work, and safe downloads and previews of deliverables."""

from __future__ import annotations

from pathlib import Path

from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.clickjacking import xframe_options_sameorigin
from django.views.decorators.http import require_GET

from deliverables.forms import WorkFilterForm
from deliverables.models import Deliverable
from deliverables.services import (
    DeliverableMissing,
    content_type_for,
    deliverable_file_path,
    deliverable_preview_kind,
)
from deliverables.work import work_page
from memory import services
from memory.dashboard import feed
from memory.models import Observation
from memory.team import scope

# Previews are rendered by the browser, so the stored file must not be able to run script
# or reach anything: `sandbox` makes it an opaque origin even when opened directly.
PREVIEW_CSP = "sandbox; default-src 'none'; img-src data: blob:; style-src 'unsafe-inline'; font-src data:; frame-ancestors 'self'"


@require_GET
def my_work(request: HttpRequest) -> HttpResponse:
    form = WorkFilterForm(request.GET or None)
    data = form.cleaned_data if form.is_valid() else {}
    work = work_page(
        project=data.get("project") or "",
        date_from=data.get("date_from"),
        date_to=data.get("date_to"),
        obs_type=data.get("type") or "",
        deliverable_kind=data.get("kind") or "",
        page=request.GET.get("page", 1),
    )
    ctx = {
        "form": form,
        "work": work,
        "projects": services.projects_list(),
        "types": Observation.Type.choices,
        "live_poll_ms": feed.LIVE_POLL_MS,
        "cursor": feed.feed_cursor(),
        "queue": feed.queue_waiting(project=data.get("project") or ""),
    }
    return render(request, "deliverables/my_work.html", ctx)


def _stored_file(pk: int) -> tuple[Deliverable, Path]:
    # Under a teammate's token (the API download) another user's id is a 404, like a
    # missing one (memory/team/scope.py); pages are staff-only in team mode and see all.
    deliverable = get_object_or_404(scope.owned(Deliverable.objects.all()), pk=pk)
    try:
        path = deliverable_file_path(deliverable=deliverable)
    except DeliverableMissing:
        raise Http404("The stored copy of this deliverable is gone.") from None
    return deliverable, path


@require_GET
def download(request: HttpRequest, pk: int) -> FileResponse:
    """The stored bytes, always as an attachment: looked up by pk, never by a path."""
    return download_response(pk)


def download_response(pk: int) -> FileResponse:
    """The attachment response for a deliverable (the page and `/api/deliverables/{id}/download`)."""
    deliverable, path = _stored_file(pk)
    response = FileResponse(
        open(path, "rb"),  # noqa: SIM115 - FileResponse closes it
        as_attachment=True,
        filename=deliverable.name,
        content_type=deliverable.content_type or content_type_for(deliverable.name),
    )
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = PREVIEW_CSP
    return response


@require_GET
@xframe_options_sameorigin
def preview(request: HttpRequest, pk: int) -> FileResponse:
    """Inline view for My Work's <img> and sandboxed <iframe>: images, HTML and text only."""
    deliverable, path = _stored_file(pk)
    kind = deliverable_preview_kind(deliverable=deliverable)
    if kind == "image":
        content_type = deliverable.content_type
    elif kind == "html":
        content_type = "text/html; charset=utf-8"
    elif kind in {"text", "markdown"}:
        content_type = "text/plain; charset=utf-8"
    else:
        raise Http404("No preview for this kind of file; download it instead.")
    response = FileResponse(open(path, "rb"), content_type=content_type)  # noqa: SIM115
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = PREVIEW_CSP
    response["Content-Disposition"] = "inline"
    response["Cache-Control"] = "private, no-store"
    return response
