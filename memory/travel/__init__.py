"""The memory's travelling forms: Markdown files a person can read and edit, and sync.

`cmem export --format markdown DIR` writes one file per memory (observation, summary,
session with its prompts, deliverable record, correction, tombstone) with YAML front
matter: markdown.py renders the rows, bodies.py writes and reads the text under the front
matter, frontmatter.py the block itself; `cmem import markdown DIR` reads a tree
(reading.py) and merges it back by global id (merge.py), all or nothing. Sync builds on the same
`documents()` / `import_files()` pair.

The package imports nothing itself: djhuey imports the sync tasks at every start of the
serving process, and the Markdown form (with YAML) is only needed when a sync or an export runs.
"""
