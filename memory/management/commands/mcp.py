from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Run cmem's MCP server on stdio (Claude Code starts it; see `cmem install`)."
    # stdout is the JSON-RPC channel: nothing else may be written to it, checks included.
    requires_system_checks: list[str] = []

    def handle(self, *args: Any, **options: Any) -> None:
        # CLI start: the MCP SDK (~0.5 s) loads when the server starts, not with the command class
        from memory.retrieval.mcp_server import main

        main()
