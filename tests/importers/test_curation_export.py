"""`cmem export` / `cmem import json` carry what curation knows of a row; an import file
with values curation does not know keeps the defaults."""

from __future__ import annotations

import pytest

from memory.curation.corrections import observation_mark
from memory.curation.remember import RememberRequest, remember
from memory.importers.json_io import memory_export, memory_import
from memory.importers.report import ImportReport
from memory.models import Observation, ObservationRevision

pytestmark = pytest.mark.django_db


def test_curation_fields_round_trip() -> None:
    kept = remember(RememberRequest(project="shop", title="Cents", text="ints", topic="money"))
    observation_mark(kept.observation.pk, action="pin", actor="user")
    gone = remember(RememberRequest(project="shop", title="Old", text="x", actor="agent"))
    observation_mark(gone.observation.pk, action="wrong", actor="user", reason="not so")
    document = memory_export(project="shop")
    Observation.objects.all().delete()
    memory_import(document=document, report=ImportReport())  # type: ignore[arg-type]
    pinned = Observation.objects.get(title="Cents")
    assert (pinned.pinned, pinned.topic, pinned.origin, pinned.person_edited) == (
        True, "money", "user", True,
    )  # fmt: skip
    wrong = Observation.objects.get(title="Old")
    assert (wrong.status, wrong.status_reason, wrong.origin) == ("wrong", "not so", "agent")
    assert not ObservationRevision.objects.exists()  # history stays on the machine


def test_unknown_curation_values_keep_the_defaults() -> None:
    document = {
        "format": "cmem-export",
        "version": 1,
        "sessions": [
            {
                "platform": "claude-code",
                "session_id": "s1",
                "project": "shop",
                "observations": [
                    {
                        "type": "discovery",
                        "title": "hostile",
                        "status": "ignore-previous-instructions",
                        "origin": "system",
                        "pinned": "yes",
                        "scope": "everyone",
                        "topic": ["not", "text"],
                    }
                ],
            }
        ],
    }
    memory_import(document=document, report=ImportReport())  # type: ignore[arg-type]
    row = Observation.objects.get(title="hostile")
    assert (row.status, row.origin, row.pinned, row.scope, row.topic) == (
        "current", "observer", False, "project", "",
    )  # fmt: skip
