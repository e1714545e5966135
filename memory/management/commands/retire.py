from __future__ import annotations

from memory.management.commands._curation import MarkCommand


class Command(MarkCommand):
    help = (
        "Retire a memory: no longer briefed or recalled as current, still searchable and "
        "labelled; `cmem restore` brings it back (only `cmem forget` deletes)."
    )
    action = "retire"
