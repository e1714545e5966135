"""One search service over observations, summaries and prompts.

`search(query)` is the only entry point. It dispatches on the database vendor: SQLite uses
the FTS5 tables of migrations 0002/0005 (`sqlite.py`, bm25), PostgreSQL its tsvector
columns (`postgres.py`, team mode). `query.mode` picks keyword, semantic (vectors) or
hybrid (both, fused by rank: `hybrid.py`). Every path returns the same `SearchHit` rows
(`query.py`), so the API, the pages and the MCP server never know which backend answered.
"""

from __future__ import annotations

from dataclasses import replace

from django.db import connection

from memory.retrieval.search.hybrid import effective_mode, mode_note, search_mode
from memory.retrieval.search.postgres import PostgresBackend
from memory.retrieval.search.query import SearchHit, SearchQuery
from memory.retrieval.search.sqlite import SqliteBackend
from memory.team.scope import restricted_owner

__all__ = ["effective_mode", "mode_note", "search"]


def search(query: SearchQuery) -> list[SearchHit]:
    """Ranked hits for `query`, best first (newest first without text). Under a teammate's
    token, every mode (keyword, semantic, hybrid) ranks only that user's rows."""
    query = replace(query, owner=restricted_owner())

    if connection.vendor == "postgresql":
        return search_mode(PostgresBackend(), query)

    return search_mode(SqliteBackend(), query)
