from __future__ import annotations

from memory.management.commands._curation import MarkCommand


class Command(MarkCommand):
    help = (
        "Pin a memory: it leads every SessionStart index of its project, within the pinned budget "
        "(CLAUDE_MEM_CONTEXT_PINNED_TOKENS). Inside an agent's shell this is only a proposal."
    )
    action = "pin"
