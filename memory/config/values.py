"""One setting read as text, a whole number, a switch or a list. Numbers are clamped to their
registry bounds, and a value that cannot be read falls back to the default with a problem
recorded (never an exception)."""

from __future__ import annotations

import logging

from memory.config.registry import INT_BOUNDS, SETTINGS
from memory.config.sources import _problems, load

# Named for the package: the clamp's warning has always come from the "memory.config" logger.
log = logging.getLogger("memory.config")

# (key, raw) pairs already logged, so a bad value is reported once per process, not per call.
_clamp_logged: set[tuple[str, str]] = set()

_BOOL_TRUE = {"1", "true", "yes", "on"}
_BOOL_FALSE = {"0", "false", "no", "off", ""}


class SettingsError(ValueError):
    """A settings value that cannot be used; the message names the key."""


def get(key: str, settings: dict[str, str] | None = None) -> str:
    values = settings if settings is not None else load()
    return values.get(key, SETTINGS.get(key, ("", ""))[0])


def get_int(key: str, settings: dict[str, str] | None = None) -> int:
    raw = get(key, settings).strip()
    try:
        value = int(raw)
    except ValueError:
        default = SETTINGS.get(key, ("0", ""))[0]
        _problems.append(f"{key}: {raw!r} is not a whole number; using {default}")
        value = int(default)
    bounds = INT_BOUNDS.get(key)
    if bounds is None:
        return value
    low, high = bounds
    clamped = min(max(value, low), high)
    if clamped != value:
        message = f"{key}: {value} is outside {low}..{high}; using {clamped}"
        _problems.append(message)
        if (key, raw) not in _clamp_logged:
            _clamp_logged.add((key, raw))
            log.warning("settings: %s", message)
    return clamped


def get_bool(key: str, settings: dict[str, str] | None = None) -> bool:
    raw = get(key, settings).strip().lower()
    if raw in _BOOL_TRUE:
        return True
    if raw in _BOOL_FALSE:
        return False
    default = SETTINGS.get(key, ("false", ""))[0]
    _problems.append(f"{key}: {raw!r} is not true/false; using {default}")
    return default.lower() in _BOOL_TRUE


def get_list(key: str, settings: dict[str, str] | None = None) -> list[str]:
    return [part.strip() for part in get(key, settings).split(",") if part.strip()]
