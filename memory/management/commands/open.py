from __future__ import annotations

import webbrowser
from typing import Any

from django.core.management.base import BaseCommand

from memory.service import lifecycle


class Command(BaseCommand):
    help = "Open the dashboard in the browser; prints its URL too (all there is without a browser)."

    def handle(self, *args: Any, **options: Any) -> None:
        state = lifecycle.worker_state()
        url = f"{state.address.url}/"
        if not state.running:
            self.stderr.write("cmem is not running; start it with `cmem start`.")
        try:
            opened = webbrowser.get().open(url)
        except webbrowser.Error:
            opened = False
        self.stdout.write(f"{'opened' if opened else 'dashboard:'} {url}")
