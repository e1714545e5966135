"""Registering cmem's MCP server with Claude Code. Placeholder until issue 6."""

from __future__ import annotations

from pathlib import Path


def mcp_register(*, home: Path, command: str) -> str:
    """Register `cmem mcp` at user scope; returns a one-line report."""
    return "MCP server registration not available yet"


def mcp_unregister(*, home: Path) -> str:
    return ""
