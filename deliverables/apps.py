from __future__ import annotations

from django.apps import AppConfig


class DeliverablesConfig(AppConfig):
    name = "deliverables"
    default_auto_field = "django.db.models.BigAutoField"
