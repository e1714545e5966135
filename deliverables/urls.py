"""My Work and the safe download and preview of a deliverable."""

from __future__ import annotations

from django.urls import path

from deliverables import views

urlpatterns = [
    path("work/", views.my_work, name="deliverables-my-work"),
    path("deliverables/<int:pk>/download/", views.download, name="deliverables-download"),
    path("deliverables/<int:pk>/preview/", views.preview, name="deliverables-preview"),
]
