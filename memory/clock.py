"""Local time as the agent should read it: the gate's `Current:` line and the SessionStart
header share one format ("YYYY-MM-DD h:mmam TZ", docs/reference/source-rules.md): one clock.

The zone is CLAUDE_MEM_TIME_ZONE (an IANA name) when set, else the worker machine's local
zone (the user's wall clock); Django's TIME_ZONE stays UTC for storage.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.utils import timezone

from memory import config

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def local_zone(settings: dict[str, str] | None = None) -> tzinfo:
    """CLAUDE_MEM_TIME_ZONE when set, else the machine's zone."""
    name = config.time_zone(settings).strip()
    zone = _zone(name) if name else None
    return zone or machine_zone()


def machine_zone() -> tzinfo:
    """The zone cmem was started in (TZ as the user had it), else /etc/localtime, else UTC."""
    return _machine_zone(os.environ.get("CMEM_MACHINE_TZ", "").lstrip(":"))


@lru_cache(maxsize=8)
def _machine_zone(name: str) -> tzinfo:
    zone = _zone(name) if name else None
    if zone is not None:
        return zone
    try:
        target = os.readlink("/etc/localtime")
        if "zoneinfo/" in target:
            zone = _zone(target.split("zoneinfo/", 1)[1])
    except OSError:
        pass
    if zone is None:
        try:
            with open("/etc/localtime", "rb") as fh:
                zone = ZoneInfo.from_file(fh, key="localtime")
        except (OSError, ValueError):
            zone = None
    return zone or UTC


def _zone(name: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


def zone_key(settings: dict[str, str] | None = None) -> str:
    """Identifies the zone for cache keys: rendered times depend on it."""
    return str(local_zone(settings))


def to_local(moment: datetime, zone: tzinfo) -> datetime:
    return moment.astimezone(zone)


def now_local(zone: tzinfo) -> datetime:
    return to_local(timezone.now(), zone)


def clock_time(moment: datetime) -> str:
    """`3:25pm`."""
    hour = moment.hour % 12 or 12
    return f"{hour}:{moment.minute:02d}{'am' if moment.hour < 12 else 'pm'}"


def short_time(moment: datetime) -> str:
    """`3:25p`: the index's compact form (one character less on every row)."""
    return clock_time(moment)[:-1]


def stamp(moment: datetime) -> str:
    """`2026-04-07 3:25pm PDT`."""
    zone_name = moment.tzname() or ""
    return f"{moment:%Y-%m-%d} {clock_time(moment)} {zone_name}".rstrip()


def day_heading(moment: datetime) -> str:
    """`Apr 5, 2026` (fixed English month names: the process locale must not change the text)."""
    return f"{_MONTHS[moment.month - 1]} {moment.day}, {moment.year}"


def when_phrase(moment: datetime, now: datetime) -> str:
    """`2:10pm today` / `Apr 5, 2026 2:10pm`: how the gate says when a file was read."""
    if moment.date() == now.date():
        return f"{clock_time(moment)} today"
    return f"{day_heading(moment)} {clock_time(moment)}"
