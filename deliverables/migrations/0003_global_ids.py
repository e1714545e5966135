"""Global ids (issue 34) on deliverable records, filled from each row's time."""

from __future__ import annotations

from django.db import migrations

from memory.migrations import _global_ids


class Migration(migrations.Migration):
    dependencies = [
        ("deliverables", "0002_attached"),
        ("memory", "0017_global_ids"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=_global_ids.add_gid_columns(
                (("deliverables_deliverable", "created"),)
            ),
            state_operations=[
                migrations.AddField(
                    model_name="deliverable", name="gid", field=_global_ids.gid_field()
                )
            ],
        ),
    ]
