from __future__ import annotations

from memory.management.commands._curation import MarkCommand


class Command(MarkCommand):
    help = "Make a retired, wrong, outdated or superseded memory current again."
    action = "restore"
