from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from memory.importers.demo import demo_load


class Command(BaseCommand):
    help = "Load a bundled demo history (project acme-shop) to see the timeline, My Work and the gate's savings."

    def handle(self, *args: Any, **options: Any) -> None:
        report = demo_load()
        if report is None:
            self.stdout.write("The demo history (project acme-shop) is already loaded.")
            return
        self.stdout.write("Loaded the demo history of project acme-shop:")
        for line in report.lines():
            self.stdout.write("  " + line)
        self.stdout.write("Open the web app (cmem serve; http://127.0.0.1:<port>/) to see it.")
