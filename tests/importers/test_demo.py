from __future__ import annotations

from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone

from deliverables.models import Deliverable
from memory.models import LedgerEntry, Observation, ObservationFile, Session, Summary

pytestmark = pytest.mark.django_db(transaction=True)


def test_demo_loads_a_recent_history_of_every_type(data_dir: Path) -> None:
    out = StringIO()
    call_command("demo", stdout=out)
    assert "Loaded the demo history" in out.getvalue()
    assert Session.objects.filter(project="acme-shop").count() == 4
    types = set(Observation.objects.values_list("type", flat=True))
    assert types == {t.value for t in Observation.Type}
    assert Summary.objects.count() == 4
    newest = Observation.objects.order_by("-created").first()
    assert newest is not None and timezone.now() - newest.created < timedelta(hours=2)
    assert ObservationFile.objects.filter(
        project="acme-shop", path="checkout/total.py", role="modified"
    ).exists()
    assert LedgerEntry.objects.filter(kind="gate_deny").exists()
    deliverable = Deliverable.objects.get()
    stored = data_dir / "deliverables" / deliverable.stored_path
    assert (
        stored.read_bytes().startswith(b"# Discount fix")
        and stored.stat().st_size == deliverable.size
    )


def test_demo_twice_does_not_duplicate() -> None:
    call_command("demo", stdout=StringIO())
    out = StringIO()
    call_command("demo", stdout=out)
    assert "already loaded" in out.getvalue()
    assert Observation.objects.count() == 13
