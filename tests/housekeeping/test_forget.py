from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from memory.models import Observation, ObservationFile, Prompt, Summary
from memory.retrieval.search.query import SearchQuery
from memory.retrieval.search.service import search
from tests.retrieval.retrieval_seed import seed

pytestmark = pytest.mark.django_db


@pytest.fixture
def ids() -> dict[str, list[int]]:
    return seed()


def _forget(client, **body):  # type: ignore[no-untyped-def]
    return client.post("/api/forget", json.dumps(body), content_type="application/json")


def test_dry_run_lists_and_keeps_everything(client, ids) -> None:
    response = _forget(client, ids=[ids["observation"][1], ids["observation"][2]])
    assert response.status_code == 200
    data = response.json()
    assert data["dry_run"] is True and data["count"] == 2 and data["deleted"] == 0
    assert [row["id"] for row in data["rows"]["observation"]] == ids["observation"][1:3]
    assert Observation.objects.count() == 7


def test_forget_by_id_deletes_rows_files_and_index(client, ids) -> None:
    target = ids["observation"][1]
    assert ObservationFile.objects.filter(observation_id=target).exists()
    data = _forget(client, ids=[target], dry_run=False).json()
    assert data["deleted"] == 1
    assert not Observation.objects.filter(pk=target).exists()
    assert not ObservationFile.objects.filter(observation_id=target).exists()
    assert target not in [
        h.id for h in search(SearchQuery(text="leak checkout", kinds=("observation",)))
    ]
    assert Observation.objects.count() == 6


def test_forget_by_query_within_a_project(client, ids) -> None:
    preview = _forget(client, query="connection pool", project="shop").json()
    assert {row["id"] for row in preview["rows"]["observation"]} == {
        ids["observation"][0],
        ids["observation"][1],
    }
    _forget(client, query="connection pool", project="shop", dry_run=False)
    assert search(SearchQuery(text="connection pool", project="shop", kinds=("observation",))) == []
    # The blog observation with the same words is still there.
    assert [h.id for h in search(SearchQuery(text="connection pool", kinds=("observation",)))] == [
        ids["observation"][6]
    ]


def test_forget_project_and_date_range_across_kinds(client, ids) -> None:
    body = {
        "project": "shop",
        "since": "2026-03-01T09:15:00Z",
        "until": "2026-03-01T09:35:00Z",
        "kinds": ["observation", "summary", "prompt"],
    }
    preview = _forget(client, **body).json()
    assert {k: [r["id"] for r in v] for k, v in preview["rows"].items()} == {
        "observation": [ids["observation"][2], ids["observation"][3]],
        "summary": [ids["summary"][0]],
        "prompt": [ids["prompt"][1]],
    }
    assert _forget(client, **body, dry_run=False).json()["deleted"] == 4
    assert (
        Observation.objects.count() == 5
        and Summary.objects.count() == 1
        and Prompt.objects.count() == 2
    )
    assert search(SearchQuery(text="split models migrations", kinds=("prompt",))) == []


def test_empty_request_is_refused(client, ids) -> None:
    response = _forget(client, dry_run=False)
    assert response.status_code == 400 and "name what to forget" in response.json()["error"]
    assert Observation.objects.count() == 7
    assert _forget(client, ids=["x"]).status_code == 422


def test_command_previews_then_deletes_with_yes(ids) -> None:
    out = StringIO()
    call_command("forget", "--ids", f"{ids['observation'][5]},{ids['observation'][6]}", stdout=out)
    assert "Would delete 2" in out.getvalue() and "--yes" in out.getvalue()
    assert Observation.objects.filter(project="blog").count() == 2
    out = StringIO()
    call_command("forget", "--project", "blog", "--yes", stdout=out)
    assert "Deleted 2" in out.getvalue()
    assert not Observation.objects.filter(project="blog").exists()
