"""FTS5: index each observation's project and type (and each summary's project) as a tag.

Filtering a broad word by project through a join walks every match of the word and reads
its row (100+ ms for a common word at 100k observations); as an FTS column the filter is
one more doclist intersection inside FTS5. The column holds a tag, `zp` + hex(project)
(`zt` + hex(type)), not the name: one token no typed word can equal, so a project's name
is never a search hit and `project : zp…` is a single-token lookup. The FTS tables read
their content through a view that derives the same tags, so `rebuild`, `integrity-check`
and the delete triggers all see exactly what was indexed. SQLite only, like 0002.
"""

from django.db import migrations

TEXT = {
    "memory_observation": [
        "title",
        "subtitle",
        "narrative",
        "facts",
        "concepts",
        "files_read",
        "files_modified",
    ],
    "memory_summary": ["request", "investigated", "learned", "completed", "next_steps", "notes"],
}
# FTS column -> SQL over the row (`{r}` is new/old in triggers, the table in the view).
TAGS = {
    "memory_observation": {"project": "'zp' || hex({r}.project)", "type": "'zt' || hex({r}.type)"},
    "memory_summary": {"project": "'zp' || hex({r}.project)"},
}


def _fts(table: str) -> str:
    return f"{table}_fts"


def _values(table: str, row: str) -> str:
    return ", ".join(
        [
            *(f"{row}.{c}" for c in TEXT[table]),
            *(expr.format(r=row) for expr in TAGS[table].values()),
        ]
    )


def _forwards_sql(table: str) -> list[str]:
    fts, view = _fts(table), f"{table}_fts_content"
    cols = ", ".join([*TEXT[table], *TAGS[table]])
    view_cols = ", ".join(
        [
            "id",
            *TEXT[table],
            *(f"{expr.format(r=table)} AS {name}" for name, expr in TAGS[table].items()),
        ]
    )
    return [
        f"CREATE VIEW {view} AS SELECT {view_cols} FROM {table}",
        f"CREATE VIRTUAL TABLE {fts} USING fts5({cols}, content='{view}', content_rowid='id', tokenize='porter unicode61')",
        f"CREATE TRIGGER {fts}_ai AFTER INSERT ON {table} BEGIN INSERT INTO {fts}(rowid, {cols}) VALUES (new.id, {_values(table, 'new')}); END",
        f"CREATE TRIGGER {fts}_ad AFTER DELETE ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, {cols}) VALUES ('delete', old.id, {_values(table, 'old')}); END",
        f"CREATE TRIGGER {fts}_au AFTER UPDATE ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, {cols}) VALUES ('delete', old.id, {_values(table, 'old')}); "
        f"INSERT INTO {fts}(rowid, {cols}) VALUES (new.id, {_values(table, 'new')}); END",
        f"INSERT INTO {fts}({fts}) VALUES ('rebuild')",
    ]


def _backwards_sql(table: str) -> list[str]:
    # Back to 0002's shape: the text columns only, content straight from the table.
    fts, cols = _fts(table), ", ".join(TEXT[table])
    new, old = (
        ", ".join(f"new.{c}" for c in TEXT[table]),
        ", ".join(f"old.{c}" for c in TEXT[table]),
    )
    return [
        f"CREATE VIRTUAL TABLE {fts} USING fts5({cols}, content='{table}', content_rowid='id', tokenize='porter unicode61')",
        f"CREATE TRIGGER {fts}_ai AFTER INSERT ON {table} BEGIN INSERT INTO {fts}(rowid, {cols}) VALUES (new.id, {new}); END",
        f"CREATE TRIGGER {fts}_ad AFTER DELETE ON {table} BEGIN INSERT INTO {fts}({fts}, rowid, {cols}) VALUES ('delete', old.id, {old}); END",
        f"CREATE TRIGGER {fts}_au AFTER UPDATE ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, {cols}) VALUES ('delete', old.id, {old}); "
        f"INSERT INTO {fts}(rowid, {cols}) VALUES (new.id, {new}); END",
        f"INSERT INTO {fts}({fts}) VALUES ('rebuild')",
    ]


def _drop(schema_editor, table: str) -> None:
    fts = _fts(table)
    for suffix in ("ai", "ad", "au"):
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {fts}_{suffix}")
    schema_editor.execute(f"DROP TABLE IF EXISTS {fts}")
    schema_editor.execute(f"DROP VIEW IF EXISTS {table}_fts_content")


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    for table in TEXT:
        _drop(schema_editor, table)
        for statement in _forwards_sql(table):
            schema_editor.execute(statement)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    for table in TEXT:
        _drop(schema_editor, table)
        for statement in _backwards_sql(table):
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("memory", "0004_context_cache_key")]
    operations = [migrations.RunPython(forwards, backwards)]
