"""The bundled model is now a 384-dimension transformer (issue 32): pgvector's column follows.

PostgreSQL with pgvector only (`pgvector.resize`): the `vector(256)` column and its HNSW
indexes are made again at 384, filled from the blobs already of that width; the earlier
model's rows are re-embedded by the background sweep, as after any model change. SQLite and
a PostgreSQL without pgvector keep only the blob, which has no fixed width.
"""

from django.db import migrations

from memory.retrieval.embeddings.pgvector import resize


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        resize(schema_editor.connection)


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0013_observation_events"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
