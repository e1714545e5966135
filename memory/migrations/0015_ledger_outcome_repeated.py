"""The ledger outcome of a failure recall after which the same error came back (issue 32)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0014_pgvector_384"),
    ]

    operations = [
        migrations.AlterField(
            model_name="ledgerentry",
            name="outcome",
            field=models.CharField(
                blank=True,
                choices=[
                    ("", "nothing"),
                    ("read_again", "read again"),
                    ("get_observations", "get_observations"),
                    ("smart_outline", "smart_outline"),
                    ("smart_unfold", "smart_unfold"),
                    ("get_tool_uses", "get_tool_uses"),
                    ("repeated", "the same error again"),
                ],
                db_default="",
                default="",
                max_length=32,
            ),
        ),
    ]
