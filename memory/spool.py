"""Worker side of the spool: events the hook client could not deliver, ingested in order.

Placeholder until issue 3 lands."""

from __future__ import annotations

from memory import config


def spool_dir():  # type: ignore[no-untyped-def]
    return config.data_dir() / "spool"


def spool_backlog() -> int:
    """How many spooled events wait to be ingested."""
    try:
        return sum(1 for p in spool_dir().iterdir() if p.suffix == ".json")
    except FileNotFoundError:
        return 0
