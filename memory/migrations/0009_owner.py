"""Team mode: rows belong to the user whose token captured them.

A session gets an owner, and everything below a session is its owner's; a ledger line
keeps the owner itself because it outlives its session (SET_NULL). Both are nullable:
the local single-user worker and imported history have no owner, and stay as they were.
The index serves the scoping filter (memory/team/scope.py: a teammate's reads).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0008_ledger_outcome_session_model"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="session",
            name="owner",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="cmem_sessions",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AddField(
            model_name="ledgerentry",
            name="owner",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="cmem_ledger",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
    ]
