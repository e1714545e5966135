"""PostgreSQL full-text search: a generated tsvector column per searchable table + GIN index.

Generated (stored) columns rather than expression indexes: ranking needs the tsvector of
every matching row, and recomputing to_tsvector per row at query time costs more than the
bytes it saves (a broad query over 1M observations would re-parse 100k documents). The
column is invisible to Django (no model field), PostgreSQL keeps it in step on every write.

Path separators and identifier punctuation become spaces first (`translate`), so
`memory/search.py` and `session_init` are words, as FTS5's unicode61 tokenizer sees them
on SQLite; weights rank a title match above a narrative or file-name match. SQLite: no-op
(migration 0002 built the FTS5 tables there).
"""

from django.db import migrations

# The characters both the documents and the queries split words on (see search_postgres).
SPLIT_CHARS = "/._-:@"
_SPACES = " " * len(SPLIT_CHARS)


def _doc(expr: str) -> str:
    return f"to_tsvector('english', translate({expr}, '{SPLIT_CHARS}', '{_SPACES}'))"


def _weighted(parts: list[tuple[str, str]]) -> str:
    return " || ".join(f"setweight({_doc(expr)}, '{weight}')" for expr, weight in parts)


COLUMNS = {
    "memory_observation": _weighted(
        [
            ("title", "A"),
            ("subtitle", "B"),
            ("narrative || ' ' || facts::text || ' ' || concepts::text", "C"),
            ("files_read::text || ' ' || files_modified::text", "D"),
        ]
    ),
    "memory_summary": _weighted(
        [
            ("request", "A"),
            ("learned || ' ' || completed", "B"),
            ("investigated || ' ' || next_steps || ' ' || notes", "C"),
        ]
    ),
    "memory_prompt": _weighted([("text", "A")]),
}


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table, expression in COLUMNS.items():
        schema_editor.execute(
            f"ALTER TABLE {table} ADD COLUMN search_vector tsvector GENERATED ALWAYS AS ({expression}) STORED"
        )
        # Used by memory/search_postgres.py: `search_vector @@ query`.
        schema_editor.execute(
            f"CREATE INDEX {table}_search_gin ON {table} USING gin (search_vector)"
        )


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in COLUMNS:
        schema_editor.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS search_vector")


class Migration(migrations.Migration):
    dependencies = [("memory", "0002_fts")]
    operations = [migrations.RunPython(forwards, backwards)]
