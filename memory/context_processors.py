"""Every page says when memory is degraded (the API keeps failing, no key, budget spent):
the same line the SessionStart header carries (memory.compression.health)."""

from __future__ import annotations

from django.http import HttpRequest

from memory.compression.health import observer_health_line


def observer_banner(request: HttpRequest) -> dict[str, str]:
    try:
        line = observer_health_line()
    except Exception:  # noqa: BLE001 - a banner must never break a page
        line = ""
    # The header speaks to the agent ("tell the user…"); the page speaks to the user.
    return {"observer_warning": line.split(" tell the user", 1)[0].removesuffix(";").strip()}
