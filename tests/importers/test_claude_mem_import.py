from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.models import Observation, ObservationFile, Prompt, Session, Summary
from tests.importers.claude_mem_db import build_claude_mem_db

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def claude_mem_db(tmp_path: Path) -> Path:
    return build_claude_mem_db(tmp_path / "claude-mem.db")


def run(db: Path) -> str:
    out = StringIO()
    call_command("import", "claude-mem", str(db), stdout=out)
    return out.getvalue()


def test_imports_sessions_prompts_observations_files_and_summaries(claude_mem_db: Path) -> None:
    output = run(claude_mem_db)
    assert Session.objects.count() == 3
    first = Session.objects.get(session_id="cc-1111")
    assert (first.platform, first.project, first.status) == ("claude-code", "shop-api", "completed")
    assert first.started.isoformat().startswith("2026-10-26")
    assert list(Prompt.objects.filter(session=first).values_list("number", "text")) == [
        (1, "first prompt of cc-1111"),
        (2, "now add tests for the checkout flow"),
    ]
    bugfix = Observation.objects.get(title="Checkout total ignored discounts")
    assert bugfix.type == "bugfix" and bugfix.facts == [
        "Discount applied after tax in checkout/total.py"
    ]
    assert (
        bugfix.concepts == ["problem-solution"] and bugfix.compressor == "claude-haiku-4-5-20251001"
    )
    assert set(ObservationFile.objects.filter(observation=bugfix).values_list("path", "role")) == {
        ("checkout/total.py", "read"),
        ("checkout/total.py", "modified"),
    }
    legacy = Observation.objects.get(title="Legacy note: README explains local setup")
    assert legacy.files_read == ["README.md"]
    assert Summary.objects.filter(session=first).count() == 2
    assert Observation.objects.count() == 4  # the orphan is reported, not guessed
    assert "1 unreadable or unknown entries skipped" in output and "mem-gone" in output
    # The claude-mem observations are what the gate and search see.
    assert ObservationFile.objects.filter(
        project="shop-api", path="checkout/money.py", role="modified"
    ).exists()


def test_second_import_adds_nothing(claude_mem_db: Path) -> None:
    run(claude_mem_db)
    counts = [m.objects.count() for m in (Session, Prompt, Observation, ObservationFile, Summary)]
    output = run(claude_mem_db)
    assert [
        m.objects.count() for m in (Session, Prompt, Observation, ObservationFile, Summary)
    ] == counts
    assert "observation    imported      0   skipped      4" in output


def test_missing_database_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="no claude-mem database"):
        run(tmp_path / "nope.db")
