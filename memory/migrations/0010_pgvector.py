"""pgvector where the PostgreSQL server has it (team mode).

Detected here, at migrate time: when the server offers the `vector` extension (and this
role may create it), `memory_embedding` gains a `vector(256)` column, `embedding`, filled
from the float16 blob of every stored row, and one HNSW index per row kind (cosine): a
search for observations then never walks summaries' graph and loses its neighbours to the
post-filter. Without pgvector nothing changes: the blob stays the only copy and the search
service's fallback scan serves (memory/retrieval/embeddings/pgvector.py says which path a
database takes). SQLite is untouched.
"""

from django.db import migrations

from memory.retrieval.embeddings.pgvector import install


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        install(schema_editor.connection)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("ALTER TABLE memory_embedding DROP COLUMN IF EXISTS embedding")


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0009_owner"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
