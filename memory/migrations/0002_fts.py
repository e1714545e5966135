"""FTS5 indexes over observations, summaries and prompts, kept in sync by triggers.

External-content tables: the text lives once, in the model tables; the triggers keep the
index in step inside the same transaction as every insert, update and delete. SQLite only:
on PostgreSQL the search service uses tsvector columns instead (see memory/search.py).
"""

from django.db import migrations

TABLES = {
    "memory_observation_fts": (
        "memory_observation",
        ["title", "subtitle", "narrative", "facts", "concepts", "files_read", "files_modified"],
    ),
    "memory_summary_fts": (
        "memory_summary",
        ["request", "investigated", "learned", "completed", "next_steps", "notes"],
    ),
    "memory_prompt_fts": ("memory_prompt", ["text"]),
}


def _statements() -> list[str]:
    sql = []
    for fts, (table, cols) in TABLES.items():
        collist = ", ".join(cols)
        new = ", ".join(f"new.{c}" for c in cols)
        old = ", ".join(f"old.{c}" for c in cols)
        sql += [
            f"CREATE VIRTUAL TABLE {fts} USING fts5({collist}, content='{table}', content_rowid='id', tokenize='porter unicode61')",
            f"CREATE TRIGGER {fts}_ai AFTER INSERT ON {table} BEGIN "
            f"INSERT INTO {fts}(rowid, {collist}) VALUES (new.id, {new}); END",
            f"CREATE TRIGGER {fts}_ad AFTER DELETE ON {table} BEGIN "
            f"INSERT INTO {fts}({fts}, rowid, {collist}) VALUES ('delete', old.id, {old}); END",
            f"CREATE TRIGGER {fts}_au AFTER UPDATE ON {table} BEGIN "
            f"INSERT INTO {fts}({fts}, rowid, {collist}) VALUES ('delete', old.id, {old}); "
            f"INSERT INTO {fts}(rowid, {collist}) VALUES (new.id, {new}); END",
            f"INSERT INTO {fts}({fts}) VALUES ('rebuild')",
        ]
    return sql


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    for statement in _statements():
        schema_editor.execute(statement)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    for fts in TABLES:
        schema_editor.execute(f"DROP TABLE IF EXISTS {fts}")


class Migration(migrations.Migration):
    dependencies = [("memory", "0001_initial")]
    operations = [migrations.RunPython(forwards, backwards)]
