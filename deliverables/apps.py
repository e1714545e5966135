"""The deliverables app: plugs itself into memory's seam (memory/extensions.py) at startup."""

from __future__ import annotations

from django.apps import AppConfig


class DeliverablesConfig(AppConfig):
    name = "deliverables"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # memory never imports this app: it reaches deliverables only through the seam it
        # owns (memory/extensions.py), which this fills once at startup.
        # in ready(): these import models, which load only once the app registry is ready
        from deliverables.mcp_tools import mcp_tools_register
        from deliverables.session_part import (
            SESSION_PART,
            on_tool_recorded,
            on_turn_finished,
            tool_recorded_wanted,
        )
        from deliverables.sync_files import FILE_STORE
        from memory import extensions

        extensions.session_part_register(SESSION_PART)
        extensions.turn_finished_connect(on_turn_finished)
        extensions.tool_recorded_connect(on_tool_recorded, wants=tool_recorded_wanted)
        extensions.file_store_register(FILE_STORE)
        mcp_tools_register()
