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
from memory.team import sharing
from memory.team.scope import readable_reach

__all__ = ["effective_mode", "mode_note", "search"]


def search(query: SearchQuery) -> list[SearchHit]:
    """Ranked hits for `query`, best first (newest first without text). Under a teammate's
    token, every mode (keyword, semantic, hybrid) ranks only that user's rows and those of
    projects shared with them, each shared hit naming its author and shown through the
    viewer's own corrections (memory/team/sharing.py)."""
    reach = readable_reach()
    if reach is not None:
        query = replace(query, owner=reach.user_id, shared=reach.shared)
    else:
        query = replace(query, owner=None, shared=())
    backend = PostgresBackend() if connection.vendor == "postgresql" else SqliteBackend()
    hits = search_mode(backend, query)
    if reach is None or not reach.shared:
        return hits
    return _as_viewer_sees(query, hits)


def _as_viewer_sees(query: SearchQuery, hits: list[SearchHit]) -> list[SearchHit]:
    """Hits with their author (a teammate's shared rows) and the viewer's own corrections
    applied: a row they marked no longer current leaves a current-only search."""
    names = sharing.authors(hit.session for hit in hits)
    marks = sharing.overlays(hit.id for hit in hits if hit.kind == "observation")
    shown = []
    for hit in hits:
        overlay = marks.get(hit.id) if hit.kind == "observation" else None
        if overlay is not None:
            if query.current_only and overlay.status != "current":
                continue
            hit = replace(hit, status=overlay.status, title=overlay.title or hit.title)
        if hit.session in names:
            hit = replace(hit, author=names[hit.session])
        shown.append(hit)
    return shown
