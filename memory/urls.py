"""Pages of the memory app: timeline, live updates, observation details and curation,
remember, session details, search, settings, stats."""

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
    # Curation (POST only): edit, pin/mark/retire/restore, undo a revision, answer a proposal.
    path("observations/<int:pk>/edit/", views.observation_edit, name="memory-observation-edit"),
    path("observations/<int:pk>/mark/", views.observation_mark, name="memory-observation-mark"),
    path("revisions/<int:pk>/undo/", views.revision_undo, name="memory-revision-undo"),
    path(
        "revisions/<int:pk>/accept/",
        views.proposal_answer,
        {"answer": "accept"},
        name="memory-proposal-accept",
    ),
    path(
        "revisions/<int:pk>/dismiss/",
        views.proposal_answer,
        {"answer": "dismiss"},
        name="memory-proposal-dismiss",
    ),
    path("remember/", views.remember_page, name="memory-remember"),
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
