"""Pages of the memory app: timeline, live updates, observation and session details, search, settings, stats."""

from __future__ import annotations

from django.urls import path

from memory import views

urlpatterns = [
    path("", views.timeline, name="memory-timeline"),
    path("live/", views.live, name="memory-live"),
    path("observations/<int:pk>/", views.observation_detail, name="memory-observation-detail"),
    path(
        "observations/<int:pk>/forget/", views.observation_forget, name="memory-observation-forget"
    ),
    path("sessions/<int:pk>/", views.session_detail, name="memory-session-detail"),
    # Project-scoped; the file's path is a query parameter so any stored spelling (an
    # absolute path outside the project, odd characters) round-trips without a converter.
    path("projects/<path:project>/file/", views.file_page, name="memory-file"),
    path("search/", views.search_page, name="memory-search"),
    path("settings/", views.settings_page, name="memory-settings"),
    path("settings/preview/", views.context_preview, name="memory-context-preview"),
    path("stats/", views.stats_page, name="memory-stats"),
    path("consolidation/", views.consolidation_page, name="memory-consolidation"),
]
