"""The site's URLs: the one NinjaAPI under /api/, then the pages of each app."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from cmem_site.api import api
from memory.access.owner_auth import owner_login

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("auth/", owner_login, name="owner-login"),
    path("", include("deliverables.urls")),
    path("", include("memory.urls")),
]

handler404 = "cmem_site.errors.page_not_found"
handler500 = "cmem_site.errors.server_error"
