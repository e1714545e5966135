"""Shared by the migrations that add global ids (memory 0017, deliverables 0003).

The loader skips modules whose name starts with an underscore, so this is no migration.
"""

from __future__ import annotations

from typing import Any

import django.utils.timezone
from django.db import migrations, models

import memory.global_ids

# (table, the column holding the row's time)
MEMORY_TABLES = (
    ("memory_session", "started"),
    ("memory_observation", "created"),
    ("memory_observationrevision", "created"),
    ("memory_summary", "created"),
)


def add_gid_columns(tables: tuple[tuple[str, str], ...]) -> list[Any]:
    """Plain ALTER TABLE ADD COLUMN, a fill from each row's time, then a unique index.

    SQLite's AddField of a unique column rebuilds the table, which would drop the FTS and
    embedding triggers of migrations 0005/0006 and rewrite a large history twice; the
    state still records an ordinary unique field.
    """

    def fill(apps: Any, schema_editor: Any) -> None:
        from django.utils.dateparse import parse_datetime  # only when the migration runs

        connection = schema_editor.connection
        with connection.cursor() as cursor:
            for table, time_column in tables:
                cursor.execute(f"SELECT id, {time_column} FROM {table} WHERE gid = '' ORDER BY id")
                rows = cursor.fetchall()
                updates = []
                for row_id, moment in rows:
                    if isinstance(moment, str):
                        moment = parse_datetime(moment)
                    if moment is None:
                        moment = django.utils.timezone.now()
                    if moment.tzinfo is None:
                        moment = moment.replace(tzinfo=django.utils.timezone.UTC)
                    updates.append((memory.global_ids.gid_at(moment), row_id))
                for start in range(0, len(updates), 5000):
                    cursor.executemany(
                        f"UPDATE {table} SET gid = %s WHERE id = %s", updates[start : start + 5000]
                    )

    return [
        migrations.RunSQL(
            [
                f"ALTER TABLE {table} ADD COLUMN gid varchar(26) NOT NULL DEFAULT ''"
                for table, _ in tables
            ],
            reverse_sql=[f"ALTER TABLE {table} DROP COLUMN gid" for table, _ in tables],
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
        migrations.RunSQL(
            [f"CREATE UNIQUE INDEX {table}_gid_uniq ON {table} (gid)" for table, _ in tables],
            reverse_sql=[f"DROP INDEX {table}_gid_uniq" for table, _ in tables],
        ),
    ]


def gid_field() -> models.CharField[Any, Any]:
    return models.CharField(
        default=memory.global_ids.new_gid, editable=False, max_length=26, unique=True
    )
