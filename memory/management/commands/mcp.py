from __future__ import annotations

import os
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Run cmem's MCP server on stdio (Claude Code starts it; see `cmem install`)."
    # stdout is the JSON-RPC channel: nothing else may be written to it, checks included.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--verbose",
            action="store_true",
            help="Log each request on stderr (quiet by default; CMEM_MCP_LOG=INFO does the same "
            "where the agent starts the server).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["verbose"]:
            os.environ["CMEM_MCP_LOG"] = "INFO"  # read when the server's module loads
        # CLI start: the MCP SDK (~0.5 s) loads when the server starts, not with the command class
        from memory.retrieval.mcp_server import main

        main()
