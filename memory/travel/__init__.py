"""The memory's travelling forms: Markdown files a person can read and edit, and sync.

`cmem export --format markdown DIR` writes one file per memory (observation, summary,
session with its prompts, deliverable record, correction, tombstone) with YAML front
matter: markdown.py renders the rows, bodies.py writes and reads the text under the front
matter, frontmatter.py the block itself; `cmem import markdown DIR` reads a tree
(reading.py) and merges it back by global id (merge.py), all or nothing. Sync builds on the same
`documents()` / `import_files()` pair.
"""

from __future__ import annotations

from memory.travel.frontmatter import MarkdownImportError
from memory.travel.markdown import Document, documents, export_markdown, write_tree
from memory.travel.merge import MergeReport, import_files, import_markdown

__all__ = [
    "Document",
    "MarkdownImportError",
    "MergeReport",
    "documents",
    "export_markdown",
    "import_files",
    "import_markdown",
    "write_tree",
]
