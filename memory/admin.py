"""Django admin: a read-mostly window on everything cmem stored.

Log-like models (what hooks captured and the observer wrote) are read-only: editing a
captured row would make memory disagree with what happened. Rows can still be deleted, and
old memory is pruned with the "Prune…" action. Excluded projects are the one editable list.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.defaultfilters import truncatechars
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from memory import config
from memory.housekeeping.observations_prune import observations_prune
from memory.models import (
    ContextCache,
    Event,
    ExcludedProject,
    FileView,
    LedgerEntry,
    Observation,
    ObservationFile,
    ObservationRevision,
    ProjectShare,
    Prompt,
    Session,
    Summary,
)

PREVIEW_CHARS = 80
JSON_SUFFIX = "_json"

# The admin speaks cmem: its name in the header, the tab and the index page.
admin.site.site_header = "cmem admin"
admin.site.site_title = "cmem"
admin.site.index_title = "Everything cmem stored"
admin.site.site_url = "/"
# No app sidebar: at 1400 px it took a fifth of the width and pushed changelist columns
# out of view; the index and breadcrumbs already lead to every list.
admin.site.enable_nav_sidebar = False


def preview(text: object, chars: int = PREVIEW_CHARS) -> str:
    return truncatechars(" ".join(str(text or "").split()), chars)


def json_pretty(value: object) -> SafeString:
    """A JSON field's value indented in a <pre> (Django shows it as one compact line)."""
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
    return format_html('<pre class="cmem-json">{}</pre>', text)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Viewable and deletable, never added or edited by hand. JSON fields are shown indented:
    on the view page each `name` is swapped for a `name_json` display built on the fly."""

    def _json_names(self) -> set[str]:
        return {f.name for f in self.model._meta.get_fields() if isinstance(f, models.JSONField)}

    def get_fields(
        self, request: HttpRequest, obj: Any = None
    ) -> Any:  # django-stubs spells a long union
        fields = super().get_fields(request, obj)
        if obj is None:
            return fields
        json_names = self._json_names()
        return [f"{f}{JSON_SUFFIX}" if f in json_names else f for f in fields]

    def __getattr__(self, name: str) -> Callable[[Any], SafeString]:
        # Only reached for attributes ModelAdmin lacks: the `name_json` displays above.
        if name.endswith(JSON_SUFFIX) and name[: -len(JSON_SUFFIX)] in self._json_names():
            field = name[: -len(JSON_SUFFIX)]

            def display(obj: Any) -> SafeString:
                return json_pretty(getattr(obj, field))

            display.short_description = field.replace("_", " ")  # type: ignore[attr-defined]
            return display
        raise AttributeError(name)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.display(description="session", ordering="session__started")
def session_link(obj: Any) -> str:
    session = obj.session
    if session is None:
        return "—"
    url = reverse("admin:memory_session_change", args=[session.pk])
    return format_html('<a href="{}">{}</a>', url, str(session))


class PromptInline(ReadOnlyInline):
    model = Prompt
    fields = ("number", "text", "created")


@admin.register(Session)
class SessionAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "project",
        "platform",
        "short_id",
        "status",
        "prompt_counter",
        "owner",
        "started",
        "ended",
    )
    list_filter = ("status", "platform", "project", "owner")
    search_fields = ("session_id", "project", "cwd")
    date_hierarchy = "started"
    ordering = ("-started",)
    inlines = [PromptInline]

    @admin.display(description="session id", ordering="session_id")
    def short_id(self, obj: Session) -> str:
        return obj.session_id[:12]


@admin.register(Prompt)
class PromptAdmin(ReadOnlyAdmin):
    list_display = ("id", "number", "text_preview", "project", session_link, "created")
    list_filter = ("session__project",)
    search_fields = ("text",)
    list_select_related = ("session",)
    raw_id_fields = ("session",)
    date_hierarchy = "created"
    ordering = ("-created",)

    @admin.display(description="text")
    def text_preview(self, obj: Prompt) -> str:
        return preview(obj.text)

    @admin.display(description="project", ordering="session__project")
    def project(self, obj: Prompt) -> str:
        return obj.session.project


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "kind",
        "tool_name",
        "status",
        "attempts",
        session_link,
        "error_preview",
        "created",
        "done_at",
    )
    list_filter = ("status", "kind", "session__project")
    search_fields = ("tool_name", "tool_use_id", "last_error")
    list_select_related = ("session",)
    raw_id_fields = ("session",)
    date_hierarchy = "created"
    ordering = ("-created",)

    @admin.display(description="last error")
    def error_preview(self, obj: Event) -> str:
        return preview(obj.last_error, 60)


class ObservationFileInline(ReadOnlyInline):
    model = ObservationFile
    fields = ("path", "role", "content_hash", "created")
    show_change_link = False


class ObservationRevisionInline(ReadOnlyInline):
    model = ObservationRevision
    fk_name = "observation"
    fields = ("created", "action", "actor", "user", "reason", "undone")
    readonly_fields = fields
    show_change_link = False


class PruneForm(forms.Form):
    older_than_days = forms.IntegerField(
        min_value=0,
        label="Older than (days)",
        help_text="Rows created more than this many days ago.",
    )
    project = forms.ChoiceField(required=False, help_text="Leave empty for every project.")

    def __init__(self, *args: Any, projects: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["project"].choices = [("", "All projects"), *((p, p) for p in projects)]  # type: ignore[attr-defined]


@admin.register(Observation)
class ObservationAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "type",
        "title_preview",
        "project",
        session_link,
        "tool_name",
        "compressor",
        "tokens",
        "created",
    )
    list_filter = ("type", "status", "origin", "pinned", "project", "compressor", "created")
    search_fields = ("title", "subtitle", "narrative")
    list_select_related = ("session",)
    raw_id_fields = ("session",)
    date_hierarchy = "created"
    ordering = ("-created",)
    inlines = [ObservationFileInline, ObservationRevisionInline]
    actions = ["prune_observations"]
    change_list_template = "admin/memory/observation/change_list.html"

    @admin.display(description="title", ordering="title")
    def title_preview(self, obj: Observation) -> str:
        return preview(obj.title, 70)

    @admin.display(description="tokens in/out")
    def tokens(self, obj: Observation) -> str:
        return f"{obj.input_tokens}/{obj.output_tokens}"

    def get_urls(self) -> list[URLPattern]:
        prune = path(
            "prune/", self.admin_site.admin_view(self.prune_view), name="memory_observation_prune"
        )
        return [prune, *super().get_urls()]

    def has_prune_permission(self, request: HttpRequest) -> bool:
        return self.has_delete_permission(request)

    @admin.action(description="Prune observations older than N days…", permissions=["prune"])
    def prune_observations(
        self, request: HttpRequest, queryset: QuerySet[Observation]
    ) -> HttpResponse | None:
        """Intermediate page: the selection only preselects the project; the form decides."""
        selected = list(queryset.values_list("pk", flat=True))
        projects = sorted(set(queryset.values_list("project", flat=True)))
        return self._prune(
            request, selected=selected, preselect=projects[0] if len(projects) == 1 else ""
        )

    def prune_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_prune_permission(request):
            raise PermissionDenied
        return self._prune(
            request, selected=None, preselect=request.GET.get("project", "")
        ) or HttpResponseRedirect(reverse("admin:memory_observation_changelist"))

    def _prune(
        self, request: HttpRequest, *, selected: list[int] | None, preselect: str
    ) -> HttpResponse | None:
        projects = sorted(Observation.objects.values_list("project", flat=True).distinct())
        report = None
        if request.method == "POST" and ("apply" in request.POST or "preview" in request.POST):
            form = PruneForm(request.POST, projects=projects)
            if form.is_valid():
                report = observations_prune(
                    older_than_days=form.cleaned_data["older_than_days"],
                    project=form.cleaned_data["project"] or None,
                    dry_run="apply" not in request.POST,
                )
                if not report.dry_run:
                    self.message_user(request, report.describe())
                    return None  # back to the change list, like delete_selected
        else:
            days = config.get_int("CLAUDE_MEM_RETENTION_DAYS") or 30
            form = PruneForm(
                initial={"older_than_days": days, "project": preselect}, projects=projects
            )
        context = {
            **self.admin_site.each_context(request),
            "title": "Prune old memory",
            "opts": self.model._meta,
            "form": form,
            "report": report,
            "selected": selected,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/memory/observation/prune.html", context)


@admin.register(ObservationFile)
class ObservationFileAdmin(ReadOnlyAdmin):
    list_display = ("id", "path", "role", "project", "observation_link", "created")
    list_filter = ("role", "project")
    search_fields = ("path",)
    list_select_related = ("observation",)
    raw_id_fields = ("observation",)
    ordering = ("-created",)

    @admin.display(description="observation")
    def observation_link(self, obj: ObservationFile) -> str:
        url = reverse("admin:memory_observation_change", args=[obj.observation_id])
        return format_html('<a href="{}">{}</a>', url, preview(obj.observation.title, 60))


@admin.register(ObservationRevision)
class ObservationRevisionAdmin(ReadOnlyAdmin):
    """Read-only like the rest of the admin: corrections are made on the observation page,
    the CLI or the API, where who may change what is enforced."""

    list_display = ("id", "action", "actor", "user", "observation_link", "reason", "created")
    list_filter = ("action", "actor", "created")
    search_fields = ("reason",)
    list_select_related = ("observation", "user")
    raw_id_fields = ("observation", "user")
    ordering = ("-created",)

    @admin.display(description="observation")
    def observation_link(self, obj: ObservationRevision) -> str:
        url = reverse("admin:memory_observation_change", args=[obj.observation_id])
        return format_html('<a href="{}">{}</a>', url, preview(obj.observation.title, 60))


@admin.register(Summary)
class SummaryAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "request_preview",
        "project",
        session_link,
        "prompt_number",
        "compressor",
        "created",
    )
    list_filter = ("project", "compressor", "created")
    search_fields = ("request", "investigated", "learned", "completed", "next_steps", "notes")
    list_select_related = ("session",)
    raw_id_fields = ("session",)
    date_hierarchy = "created"
    ordering = ("-created",)

    @admin.display(description="request")
    def request_preview(self, obj: Summary) -> str:
        return preview(obj.request)


@admin.register(FileView)
class FileViewAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "path",
        session_link,
        "partial",
        "offset",
        "limit",
        "size",
        "denied",
        "seen",
    )
    list_filter = ("partial", "denied")
    search_fields = ("path",)
    list_select_related = ("session",)
    raw_id_fields = ("session",)
    ordering = ("-seen",)


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "kind",
        "project",
        "path_preview",
        "tokens_shown",
        "tokens_avoided",
        "tokens_spent",
        "created",
    )
    list_filter = ("kind", "project", "created")
    search_fields = ("path", "project")
    list_select_related = ("session",)
    raw_id_fields = ("session",)
    date_hierarchy = "created"
    ordering = ("-created",)

    @admin.display(description="path")
    def path_preview(self, obj: LedgerEntry) -> str:
        return preview(obj.path, 60)


@admin.register(ProjectShare)
class ProjectShareAdmin(ReadOnlyAdmin):
    """Team sharing (memory/team/sharing.py): staff see every share and may delete one; a
    share is made by its owner only (`cmem share`, `POST /api/shares`)."""

    list_display = ("id", "owner", "project", "everyone", "member_names", "created")
    list_filter = ("everyone", "created")
    search_fields = ("project", "owner__username")
    list_select_related = ("owner",)
    ordering = ("-created",)

    @admin.display(description="members")
    def member_names(self, obj: ProjectShare) -> str:
        return ", ".join(sorted(u.get_username() for u in obj.members.all()))


@admin.register(ContextCache)
class ContextCacheAdmin(ReadOnlyAdmin):
    """Deleting a row here forces the next SessionStart to render the index afresh."""

    list_display = ("project", "tokens", "text_preview", "created")
    search_fields = ("project",)
    ordering = ("project",)

    @admin.display(description="index")
    def text_preview(self, obj: ContextCache) -> str:
        return preview(obj.text, 100)


@admin.register(ExcludedProject)
class ExcludedProjectAdmin(admin.ModelAdmin):
    """Globs of project paths (or folder names) that store nothing, on top of the
    CLAUDE_MEM_EXCLUDED_PROJECTS setting: `~/work/secret/**`, `*-private`."""

    list_display = ("glob", "note", "created")
    search_fields = ("glob", "note")
    fields = ("glob", "note")
    ordering = ("glob",)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        from_settings = config.get_list("CLAUDE_MEM_EXCLUDED_PROJECTS")
        if from_settings:
            self.message_user(
                request,
                f"Also excluded by CLAUDE_MEM_EXCLUDED_PROJECTS: {', '.join(from_settings)}",
            )
        return super().changelist_view(request, extra_context)


# --- Team mode: API tokens ----------------------------------------------------------
from django.contrib import messages  # noqa: E402 - appended section, kept self-contained

from memory.models import ApiToken  # noqa: E402
from memory.team.tokens import token_create, token_revoke  # noqa: E402


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Per-user tokens of hook clients. Adding one shows the token once, in a message; only
    its sha256 and first characters are kept. Revoking is for good."""

    list_display = ("prefix_shown", "name", "user", "revoked", "last_used", "created")
    list_filter = ("revoked",)
    search_fields = ("name", "prefix", "user__username")
    list_select_related = ("user",)
    ordering = ("-created",)
    actions = ["revoke_tokens"]

    @admin.display(description="token", ordering="prefix")
    def prefix_shown(self, obj: ApiToken) -> str:
        return f"{obj.prefix}…"

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> tuple[str, ...]:
        return (
            ("user", "name")
            if obj is None
            else ("user", "name", "prefix_shown", "revoked", "last_used", "created")
        )

    def get_readonly_fields(
        self, request: HttpRequest, obj: ApiToken | None = None
    ) -> tuple[str, ...]:
        if obj is None:
            return ()
        return ("user", "prefix_shown", "last_used", "created") + (
            ("revoked",) if obj.revoked else ()
        )

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        token, raw = token_create(user=obj.user, name=obj.name)
        # The admin goes on with `obj` (log entry, redirect): make it the saved row.
        obj.pk, obj.token_hash, obj.prefix, obj.created = (
            token.pk,
            token.token_hash,
            token.prefix,
            token.created,
        )
        obj._state.adding, obj._state.db = False, token._state.db
        messages.warning(
            request,
            f"Token for {obj.user}: {raw} — copy it now, it is not shown again. "
            "Hook clients send it as CLAUDE_MEM_API_TOKEN.",
        )

    @admin.action(description="Revoke selected tokens")
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        for token in queryset.filter(revoked=False):
            token_revoke(token=token)
        self.message_user(request, "Revoked. Requests with those tokens now get 401.")
