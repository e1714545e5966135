from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memory.config import reference


class Command(BaseCommand):
    help = "Print every CLAUDE_MEM_* setting with its default and meaning as a Markdown table."

    def handle(self, *args: Any, **options: Any) -> None:
        # Made from the registry (memory/config/registry.py), as docs/reference/settings.md is.
        for line in reference.settings_table():
            self.stdout.write(line)
