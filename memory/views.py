"""Pages: the timeline, observation details and their curation, remember, session details,
search, settings and stats."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from memory import config, services
from memory.access.owner_auth import signed_in_as_owner
from memory.agents.install.agents import hooks_installed
from memory.briefing.file_history import file_history
from memory.briefing.savings import savings
from memory.compression.health import tokens_used_today
from memory.compression.providers import provider_choice
from memory.curation import corrections, proposals
from memory.curation import remember as remembering
from memory.curation.consolidation.recent import (
    consolidation_changes,
    consolidation_changes_include,
)
from memory.curation.consolidation.run import ConsolidationError, consolidation_run
from memory.curation.consolidation.run import last_pass as consolidation_last_pass
from memory.curation.policy import Actor, CurationDenied, CurationError, CurationNotFound
from memory.dashboard import charts, feed
from memory.forms import (
    ConsolidationForm,
    FeedFilterForm,
    ObservationEditForm,
    ObservationMarkForm,
    RememberForm,
    SearchForm,
    SettingsForm,
    StatsForm,
)
from memory.housekeeping.forget import ForgetRequest, observations_forget
from memory.housekeeping.retention import database_growth
from memory.ledger.session import session_ledger
from memory.models import Observation, ObservationRevision, Prompt, Session
from memory.retrieval import embeddings
from memory.retrieval.search.fold import hits_fold
from memory.retrieval.search.query import KINDS, SearchQuery
from memory.retrieval.search.service import mode_note, search
from memory.retrieval.tool_uses import ToolUseRef, tool_uses_fetch
from memory.team import scope

CURATION_ERRORS = (CurationError, CurationDenied, CurationNotFound)


def _int_param(request: HttpRequest, name: str) -> int:
    try:
        return max(0, int(request.GET.get(name, "0")))
    except ValueError:
        return 0


@require_GET
def timeline(request: HttpRequest) -> HttpResponse:
    form = FeedFilterForm(request.GET or None)
    data = form.cleaned_data if form.is_valid() else {}
    filters = feed.FeedFilters(
        project=data.get("project") or "",
        type=data.get("type") or "",
        kind=data.get("kind") or "",
        q=data.get("q") or "",
        date_from=data.get("date_from"),
        date_to=data.get("date_to"),
        platform=data.get("platform") or "",
    )
    page = feed.feed_page(filters=filters, page=request.GET.get("page", 1))
    empty_install = not page.days and filters.is_default
    ctx = {
        "form": form,
        "feed": page,
        "filters": filters,
        "projects": services.projects_list(),
        # New rows can only belong at the top of an unfiltered-by-time first page.
        "live": page.page.number == 1
        and not (filters.q or filters.date_to or filters.kind or filters.type or filters.platform),
        "live_poll_ms": feed.LIVE_POLL_MS,
        "queue": feed.queue_waiting(project=filters.project),
        "observer_provider": _observer_provider_line(),
        # Only an empty timeline says what to do next, and that depends on the hooks.
        "hooks_in": hooks_installed() if empty_install else [],
    }
    return render(request, "memory/timeline.html", ctx)


@require_GET
def live(request: HttpRequest) -> JsonResponse:
    """Polling endpoint: rows newer than the page's ids, each as escaped HTML with where it
    belongs (its local day, its session, its order inside the session block), the new ids
    and the compression queue. `html` (all rows, newest first) stays for older pages."""
    # No project name holds NUL (PostgreSQL text cannot): drop it rather than fail the poll.
    project = request.GET.get("project", "")[:200].replace("\x00", "")
    update = feed.feed_live(
        after_observation=_int_param(request, "obs"),
        after_summary=_int_param(request, "sum"),
        after_prompt=_int_param(request, "prompt"),
        project=project,
    )
    items = []
    for item in update.items:
        day = feed.feed_day_key(item)
        session = item.obj.session
        items.append(
            {
                "id": f"{item.kind}-{item.obj.pk}"
                if item.kind != "observation"
                else f"obs-{item.obj.pk}",
                "kind": item.kind,
                "day": day.isoformat(),
                "session": session.pk,
                "sort": feed.feed_sort_key(item),
                "html": render_to_string("memory/_feed_item.html", {"item": item}, request=request),
                "day_html": render_to_string(
                    "memory/_feed_day.html", {"day": day}, request=request
                ),
                "block_html": render_to_string(
                    "memory/_feed_block.html", {"session": session}, request=request
                ),
            }
        )
    html = (
        render_to_string("memory/_live_items.html", {"items": update.items}, request=request)
        if update.items
        else ""
    )
    return JsonResponse(
        {
            "html": html,
            "items": items,
            "count": len(update.items),
            "queue": update.queue,
            "obs": update.cursor.observation,
            "sum": update.cursor.summary,
            "prompt": update.cursor.prompt,
        }
    )


@require_GET
def observation_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return _observation_page(request, _observation_or_404(pk))


TOOL_USES_SHOWN = 20


def _observation_or_404(pk: int) -> Observation:
    return get_object_or_404(Observation.objects.select_related("session", "superseded_by"), pk=pk)


def _observation_page(
    request: HttpRequest,
    observation: Observation,
    *,
    edit_form: ObservationEditForm | None = None,
    status: int = 200,
) -> HttpResponse:
    prompt = None
    if observation.prompt_number is not None:
        prompt = Prompt.objects.filter(
            session=observation.session, number=observation.prompt_number
        ).first()
    ctx = {
        "obs": observation,
        "prompt": prompt,
        "curation": services.observation_curation(observation=observation),
        "edit_form": edit_form or ObservationEditForm.for_row(observation),
        # A refused edit comes back open, with what was typed.
        "edit_open": edit_form is not None,
        # The tool uses it was made from, raw (the page escapes them; each one collapsed).
        "tool_uses": tool_uses_fetch(
            refs=[ToolUseRef(kind="observation", pk=observation.pk)], limit=TOOL_USES_SHOWN
        ),
    }
    return render(request, "memory/observation_detail.html", ctx, status=status)


# What the curation services refuse with, and the status the page answers with.
_REFUSALS: dict[type[Exception], int] = {
    CurationError: 400,
    CurationDenied: 403,
    CurationNotFound: 404,
}
MARK_DONE = {
    "pin": "Pinned #{pk}: it leads the index of new sessions.",
    "unpin": "Unpinned #{pk}.",
    "wrong": "Marked #{pk} wrong: new sessions no longer see it as current.",
    "outdated": "Marked #{pk} outdated.",
    "supersede": "Marked #{pk} superseded by #{by}.",
    "retire": "Retired #{pk}: it stays searchable and can be restored.",
    "restore": "Restored #{pk}: it is current again.",
}


def _refused(
    request: HttpRequest,
    observation: Observation,
    exc: Exception,
    *,
    edit_form: ObservationEditForm | None = None,
) -> HttpResponse:
    """The page again, with the service's reason and a 4xx status; the service's
    transaction rolled back, so nothing changed."""
    status = _status_of(exc)
    messages.error(request, f"Nothing changed: {exc}")
    observation.refresh_from_db()
    return _observation_page(request, observation, edit_form=edit_form, status=status)


def _form_refused(
    request: HttpRequest,
    observation: Observation,
    form: forms.Form,
    *,
    edit_form: ObservationEditForm | None = None,
) -> HttpResponse:
    problems = "; ".join(
        f"{form[name].label if name in form.fields else name}: " + " ".join(str(e) for e in errors)
        for name, errors in form.errors.items()
    )
    return _refused(request, observation, CurationError(problems), edit_form=edit_form)


def _as_person(request: HttpRequest) -> AbstractContextManager[object]:
    """Attribute the change to the signed-in user (team mode: a staff login; the pages are
    staff-only there and show every user's rows, so the scope is a staff one)."""
    user = getattr(request, "user", None)
    # The local owner is signed in to the admin as its superuser (owner_auth.owner_admin_login)
    # only to open the admin: their rows stay unowned, like the hooks' rows on this worker.
    if signed_in_as_owner(request):
        return nullcontext()
    if user is not None and user.is_authenticated:
        return scope.viewer_scope(user_id=user.pk, staff=True)
    return nullcontext()


@require_POST
def observation_edit(request: HttpRequest, pk: int) -> HttpResponse:
    observation = _observation_or_404(pk)
    form = ObservationEditForm(request.POST)
    if not form.is_valid():
        return _form_refused(request, observation, form, edit_form=form)
    changes = form.changes(observation)
    if not changes:
        messages.info(request, f"Nothing to change in #{pk}.")
        return redirect(observation)
    redact = form.cleaned_data["redact"]
    try:
        with _as_person(request):
            corrections.observation_edit(
                pk,
                changes=changes,
                actor=Actor.USER,
                reason=form.cleaned_data["reason"],
                redact=redact,
            )
    except CURATION_ERRORS as exc:
        return _refused(request, observation, exc, edit_form=form)
    purged = " The old text was purged from its history." if redact else ""
    messages.success(request, f"Saved #{pk}.{purged}")
    return redirect(observation)


@require_POST
def observation_mark(request: HttpRequest, pk: int) -> HttpResponse:
    observation = _observation_or_404(pk)
    form = ObservationMarkForm(request.POST)
    if not form.is_valid():
        return _form_refused(request, observation, form)
    action = form.cleaned_data["action"]
    by = form.cleaned_data["superseded_by"]
    try:
        with _as_person(request):
            corrections.observation_mark(
                pk,
                action=action,
                actor=Actor.USER,
                reason=form.cleaned_data["reason"],
                superseded_by=by if action == "supersede" else None,
            )
    except CURATION_ERRORS as exc:
        return _refused(request, observation, exc)
    messages.success(request, MARK_DONE[action].format(pk=pk, by=by))
    return redirect(observation)


@require_POST
def revision_undo(request: HttpRequest, pk: int) -> HttpResponse:
    revision = get_object_or_404(ObservationRevision.objects.select_related("observation"), pk=pk)
    observation = revision.observation
    try:
        with _as_person(request):
            corrections.revision_undo(pk, actor=Actor.USER)
    except CURATION_ERRORS as exc:
        return _refused(request, observation, exc)
    messages.success(request, f"Undid revision #{pk} ({revision.action}) of #{observation.pk}.")
    return redirect(observation)


@require_POST
def proposal_answer(request: HttpRequest, pk: int, answer: str) -> HttpResponse:
    """Accept or dismiss the agent's proposal (pin it, widen it to all projects)."""
    revision = get_object_or_404(ObservationRevision.objects.select_related("observation"), pk=pk)
    observation = revision.observation
    answer_fn = proposals.proposal_accept if answer == "accept" else proposals.proposal_dismiss
    try:
        with _as_person(request):
            answer_fn(pk)
    except CURATION_ERRORS as exc:
        return _refused(request, observation, exc)
    done = "Accepted" if answer == "accept" else "Dismissed"
    messages.success(request, f"{done} the agent's proposal #{pk} for #{observation.pk}.")
    return redirect(observation)


@require_http_methods(["GET", "POST"])
def remember_page(request: HttpRequest) -> HttpResponse:
    """Write a memory by hand, for a project (or all of them): a person's memory, which
    neither the agent nor consolidation may change."""
    projects = services.projects_list()
    status = 200
    if request.method == "POST":
        form = RememberForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                with _as_person(request):
                    result = remembering.remember(
                        remembering.RememberRequest(
                            project=data["project"],
                            title=data["title"],
                            text=data["text"],
                            kind=data["kind"],
                            topic=data["topic"],
                            scope=data["scope"],
                            actor=Actor.USER,
                        )
                    )
            except CURATION_ERRORS as exc:
                messages.error(request, f"Nothing remembered: {exc}")
                status = _status_of(exc)
            else:
                row = result.observation
                if not result.created:
                    messages.info(request, f"Already remembered as #{row.pk}.")
                elif result.superseded is not None:
                    messages.success(
                        request, f"Remembered #{row.pk}; it replaces #{result.superseded.pk}."
                    )
                else:
                    messages.success(request, f"Remembered #{row.pk}.")
                return redirect(row)
        else:
            status = 400
    else:
        form = RememberForm(initial={"project": request.GET.get("project", "")[:200]})
    return render(
        request, "memory/remember.html", {"form": form, "projects": projects}, status=status
    )


def _status_of(exc: Exception) -> int:
    return next((code for kind, code in _REFUSALS.items() if isinstance(exc, kind)), 400)


@require_http_methods(["GET", "POST"])
def observation_forget(request: HttpRequest, pk: int) -> HttpResponse:
    """GET asks for confirmation; POST (with CSRF) deletes the observation."""
    observation = get_object_or_404(Observation, pk=pk)
    if request.method == "POST":
        title = observation.title
        observations_forget(request=ForgetRequest(ids=(observation.pk,), dry_run=False))
        messages.success(request, f"Forgot observation #{pk}: {title}")
        return redirect("memory-timeline")
    return render(request, "memory/observation_forget.html", {"obs": observation})


@require_GET
def session_detail(request: HttpRequest, pk: int) -> HttpResponse:
    session = get_object_or_404(Session, pk=pk)
    grouped = services.session_turns(session=session)
    ctx = {
        "session": session,
        "turns": grouped.turns,
        "loose": grouped.loose,
        "loose_summaries": grouped.loose_summaries,
        "ledger": session_ledger(session=session),
        "gate_mode": services.gate_modes_list(project=session.project)[0],
    }
    return render(request, "memory/session_detail.html", ctx)


@require_GET
def file_page(request: HttpRequest, project: str) -> HttpResponse:
    """Everything memory knows about one file of one project (memory/briefing/file_history.py)."""
    raw = request.GET.get("path", "")[:4096]
    if "\x00" in project:
        raise Http404("No such project.")
    history = file_history(project=project[:200], path=raw)
    if not history.path:
        raise Http404("Name a file: ?path=")
    # Unknown files still get the page (it says so), with a 404 status.
    return render(
        request, "memory/file.html", {"history": history}, status=200 if history.known else 404
    )


@require_GET
def search_page(request: HttpRequest) -> HttpResponse:
    meaning = embeddings.installed()
    form = SearchForm(request.GET or None, meaning=meaning)
    hits = []
    note = ""
    data = form.cleaned_data if form.is_valid() else {}
    if data.get("q"):
        kind = data.get("kind")
        query = SearchQuery(
            text=data["q"],
            project=data.get("project") or None,
            kinds=(kind,) if kind else KINDS,
            types=(data["type"],) if data.get("type") else (),
            limit=50,
            mode=data.get("mode") or ("hybrid" if meaning else "keyword"),
        )
        hits = search(query)
        note = mode_note(query.mode, query.kinds)
    ctx = {
        "form": form,
        "hits": hits,
        "folds": hits_fold(hits),
        "projects": services.projects_list(),
        "searched": bool(data.get("q")),
        "mode_note": note,
        "meaning": meaning,
    }
    return render(request, "memory/search.html", ctx)


@require_http_methods(["GET", "POST"])
def settings_page(request: HttpRequest) -> HttpResponse:
    current = config.load()
    if request.method == "POST":
        form = SettingsForm(request.POST, current=current)
        if form.is_valid():
            config.save(form.updates())
            services.context_caches_invalidate()
            messages.success(
                request, "Settings saved. The SessionStart index will be rebuilt with them."
            )
            return redirect("memory-settings")
    else:
        form = SettingsForm(current=current)
    projects = services.projects_list()
    project = request.GET.get("project") or (projects[0] if projects else "")
    ctx = {
        "form": form,
        "projects": projects,
        "preview": services.context_preview(project=project) if project else None,
        "problems": config.problems(),
        "settings_path": config.settings_path(),
    }
    return render(request, "memory/settings.html", ctx)


@require_GET
def context_preview(request: HttpRequest) -> JsonResponse:
    project = request.GET.get("project", "")[:200]
    if not project:
        return JsonResponse({"error": "choose a project"}, status=400)
    preview = services.context_preview(project=project)
    return JsonResponse({"project": project, "text": preview.text})


@require_GET
def stats_page(request: HttpRequest) -> HttpResponse:
    form = StatsForm(request.GET or None)
    data = form.cleaned_data if form.is_valid() else {}
    stats = charts.stats_charts(days=data.get("days") or 30, project=data.get("project") or "")
    return render(
        request,
        "memory/stats.html",
        {
            "form": form,
            "stats": stats,
            "projects": services.projects_list(),
            "database": _database_growth_line(),
            "gate_modes": services.gate_modes_list(project=data.get("project") or ""),
            "savings": savings(project=data.get("project") or None, days=data.get("days") or 30),
            "observer_provider": _observer_provider_line(),
        },
    )


def _observer_provider_line() -> str:
    """The dashboard's health line: which provider writes the observations and why."""
    try:
        choice = provider_choice()
    except Exception:  # noqa: BLE001 - a status line must never break a page
        return ""
    return f"Observer: {choice.name} ({choice.why}); {tokens_used_today():,} tokens today."


def _database_growth_line() -> str:
    try:
        return database_growth().describe()
    except Exception:  # noqa: BLE001 - the size is a footnote; never fail the page over it
        return ""


# -- the consolidation page (memory/curation/consolidation/) ---------------------------------
@require_http_methods(["GET", "POST"])
def consolidation_page(request: HttpRequest) -> HttpResponse:
    """Every change the pass made, with its reason and an undo; a run (dry run first).

    POST `undo=<revision>` puts back one change as the person; POST `run` runs the pass
    (a dry run renders what it would do; a real run redirects with its summary)."""
    report = None
    status = 200
    form = ConsolidationForm(request.POST or None)
    if request.method == "POST":
        if not form.is_valid():
            messages.error(request, " ".join(str(m) for e in form.errors.values() for m in e))
            status = 400
        elif form.cleaned_data.get("undo"):
            status = _consolidation_undo(request, form.cleaned_data["undo"])
            if status == 200:
                return redirect("memory-consolidation")
        else:
            try:
                report = consolidation_run(
                    project=form.cleaned_data.get("project") or None,
                    mode=form.cleaned_data.get("mode") or None,
                    dry_run=form.cleaned_data.get("dry_run", False),
                )
            except ConsolidationError as exc:
                messages.error(request, str(exc))
                status = 400
            else:
                if not report.dry_run:
                    messages.success(request, report.summary())
                    return redirect("memory-consolidation")
    ctx = {
        "changes": consolidation_changes(limit=200),
        "report": report,
        "projects": services.projects_list(),
        "mode": config.consolidate_mode(),
        "every_hours": config.consolidate_every_hours(),
        "last_pass": consolidation_last_pass(),
    }
    return render(request, "memory/consolidation.html", ctx, status=status)


def _consolidation_undo(request: HttpRequest, revision_id: int) -> int:
    """Undo one consolidation change as the person; the HTTP status the page answers with."""
    if not consolidation_changes_include(revision_id):
        messages.error(request, f"No consolidation change #{revision_id}.")
        return 404
    try:
        row = corrections.revision_undo(revision_id, actor=Actor.USER)
    except CurationNotFound as exc:
        messages.error(request, str(exc))
        return 404
    except CurationDenied as exc:
        messages.error(request, str(exc))
        return 403
    except CurationError as exc:
        messages.error(request, str(exc))
        return 400
    messages.success(
        request,
        f"Undid change #{revision_id}: #{row.pk} is {row.status} again; the pass will not redo it.",
    )
    return 200
