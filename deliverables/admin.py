"""Django admin for deliverables: read-only, like every log-like model."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.template.defaultfilters import filesizeformat

from deliverables.models import Deliverable


@admin.register(Deliverable)
class DeliverableAdmin(admin.ModelAdmin):
    """Read-only: the row describes a stored copy; editing it would point at the wrong bytes."""

    list_display = ("id", "name", "project", "human_size", "short_sha", "session", "created")
    list_filter = ("project", "content_type", "created")
    search_fields = ("original_path", "stored_path", "sha256")
    list_select_related = ("session",)
    raw_id_fields = ("session", "prompt")
    date_hierarchy = "created"
    ordering = ("-created",)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="size", ordering="size")
    def human_size(self, obj: Deliverable) -> str:
        return filesizeformat(obj.size)

    @admin.display(description="sha256")
    def short_sha(self, obj: Deliverable) -> str:
        return obj.sha256[:12]
