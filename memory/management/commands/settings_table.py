from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memory import config


class Command(BaseCommand):
    help = "Print every CLAUDE_MEM_* setting with its default and meaning as a Markdown table."

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write("| key | default | meaning |")
        self.stdout.write("|---|---|---|")
        for key, (default, meaning) in config.SETTINGS.items():
            if key == "CLAUDE_MEM_WORKER_PORT":
                default = "37700 + uid % 100"  # the computed value differs per user
            shown = f"`{default}`" if default else "(empty)"
            cell = shown.replace("|", r"\|")  # a pipe would end the Markdown cell
            self.stdout.write(f"| `{key}` | {cell} | {meaning} |")
