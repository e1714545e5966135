"""Global ids (issue 34): a ULID on sessions, observations, their revisions and summaries,
filled for existing rows from each row's own time; tombstones of forgotten rows."""

from __future__ import annotations

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

from memory.migrations import _global_ids


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0016_obsfile_path_role_idx"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=_global_ids.add_gid_columns(_global_ids.MEMORY_TABLES),
            state_operations=[
                migrations.AddField(model_name=model, name="gid", field=_global_ids.gid_field())
                for model in ("session", "observation", "observationrevision", "summary")
            ],
        ),
        migrations.CreateModel(
            name="Tombstone",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("gid", models.CharField(max_length=26, unique=True)),
                ("kind", models.CharField(max_length=16)),
                ("project", models.CharField(blank=True, max_length=200)),
                ("created", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "owner",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="cmem_tombstones",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["created"], name="tombstone_created_idx")],
            },
        ),
    ]
