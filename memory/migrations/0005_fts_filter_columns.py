"""FTS5: index `project` (observations, summaries) and `type` (observations) too.

Filtering a broad word by project through a join means walking every match of the word
and reading its row (100+ ms for a common word at 100k observations); as FTS columns the
filter is one more doclist intersection inside FTS5 (about 1 ms). memory/search.py keeps
free text to the content columns with a column filter, so a project's name is never a hit
by itself, and still checks the exact value on the row. SQLite only, like 0002.
"""

from django.db import migrations

OLD = {
    "memory_observation_fts": ("memory_observation", ["title", "subtitle", "narrative", "facts", "concepts", "files_read", "files_modified"]),
    "memory_summary_fts": ("memory_summary", ["request", "investigated", "learned", "completed", "next_steps", "notes"]),
}
NEW = {
    "memory_observation_fts": ("memory_observation", [*OLD["memory_observation_fts"][1], "project", "type"]),
    "memory_summary_fts": ("memory_summary", [*OLD["memory_summary_fts"][1], "project"]),
}


def _create(fts: str, table: str, cols: list[str]) -> list[str]:
    collist = ", ".join(cols)
    new = ", ".join(f"new.{c}" for c in cols)
    old = ", ".join(f"old.{c}" for c in cols)
    return [
        f"CREATE VIRTUAL TABLE {fts} USING fts5({collist}, content='{table}', content_rowid='id', tokenize='porter unicode61')",
        f"CREATE TRIGGER {fts}_ai AFTER INSERT ON {table} BEGIN INSERT INTO {fts}(rowid, {collist}) VALUES (new.id, {new}); END",
        f"CREATE TRIGGER {fts}_ad AFTER DELETE ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, {collist}) VALUES ('delete', old.id, {old}); END",
        f"CREATE TRIGGER {fts}_au AFTER UPDATE ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, {collist}) VALUES ('delete', old.id, {old}); "
        f"INSERT INTO {fts}(rowid, {collist}) VALUES (new.id, {new}); END",
        f"INSERT INTO {fts}({fts}) VALUES ('rebuild')",
    ]


def _replace(schema_editor, tables: dict[str, tuple[str, list[str]]]) -> None:
    if schema_editor.connection.vendor != "sqlite":
        return
    for fts, (table, cols) in tables.items():
        for suffix in ("ai", "ad", "au"):
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {fts}_{suffix}")
        schema_editor.execute(f"DROP TABLE IF EXISTS {fts}")
        for statement in _create(fts, table, cols):
            schema_editor.execute(statement)


def forwards(apps, schema_editor):
    _replace(schema_editor, NEW)


def backwards(apps, schema_editor):
    _replace(schema_editor, OLD)


class Migration(migrations.Migration):
    dependencies = [("memory", "0004_context_cache_key")]
    operations = [migrations.RunPython(forwards, backwards)]
