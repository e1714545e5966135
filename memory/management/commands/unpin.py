from __future__ import annotations

from memory.management.commands._curation import MarkCommand


class Command(MarkCommand):
    help = "Unpin a memory: it is briefed like any other again."
    action = "unpin"
