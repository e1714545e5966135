from __future__ import annotations

from datetime import timedelta

import pytest

from memory.models import Observation
from tests.retrieval.retrieval_seed import T0, seed

pytestmark = pytest.mark.django_db


@pytest.fixture
def ids() -> dict[str, list[int]]:
    return seed()


def _timeline(client, **params):  # type: ignore[no-untyped-def]
    response = client.get("/api/timeline", params)
    assert response.status_code == 200, response.content
    return response.json()


def test_interleaves_kinds_in_order_around_an_observation(client, ids) -> None:
    obs, summary, prompt = ids["observation"], ids["summary"], ids["prompt"]
    data = _timeline(client, anchor=str(obs[2]), depth_before=2, depth_after=2)
    assert [(i["kind"], i["id"]) for i in data["items"]] == [
        ("observation", obs[1]),
        ("summary", summary[0]),
        ("observation", obs[2]),
        ("observation", obs[3]),
        ("prompt", prompt[1]),
    ]
    assert [i["is_anchor"] for i in data["items"]] == [False, False, True, False, False]
    assert data["anchor"]["id"] == obs[2]


def test_stays_inside_the_anchors_project(client, ids) -> None:
    data = _timeline(client, anchor=str(ids["observation"][5]), depth_before=20, depth_after=20)
    assert {i["project"] for i in data["items"]} == {"blog"}
    assert [i["kind"] for i in data["items"]] == ["prompt", "observation", "summary", "observation"]


def test_summary_and_prompt_anchors(client, ids) -> None:
    data = _timeline(client, anchor=f"S{ids['summary'][0]}", depth_before=1, depth_after=1)
    assert [(i["kind"], i["id"]) for i in data["items"]] == [
        ("observation", ids["observation"][1]),
        ("summary", ids["summary"][0]),
        ("observation", ids["observation"][2]),
    ]
    data = _timeline(client, anchor=f"#P{ids['prompt'][0]}", depth_before=3, depth_after=1)
    assert [i["kind"] for i in data["items"]] == ["prompt", "observation"]


def test_query_anchor_is_the_best_hit(client, ids) -> None:
    data = _timeline(client, q="redis session cache", depth_before=0, depth_after=0)
    assert [(i["kind"], i["id"]) for i in data["items"]] == [("observation", ids["observation"][3])]
    assert data["query"] == "redis session cache"


def test_rows_at_the_same_instant_keep_a_stable_order(client, ids) -> None:
    anchor = Observation.objects.get(pk=ids["observation"][2])
    twin = Observation.objects.create(
        session=anchor.session, project="shop", title="Same instant", created=anchor.created
    )
    before = _timeline(client, anchor=str(twin.pk), depth_before=1, depth_after=0)["items"]
    after = _timeline(client, anchor=str(anchor.pk), depth_before=0, depth_after=1)["items"]
    assert [i["id"] for i in before] == [anchor.pk, twin.pk]
    assert [i["id"] for i in after] == [anchor.pk, twin.pk]


def test_depth_is_capped_and_edges_are_fine(client, ids) -> None:
    last = Observation.objects.filter(project="shop").order_by("-created").first()
    assert last is not None and last.created == T0 + timedelta(minutes=40)
    data = _timeline(client, anchor=str(last.pk), depth_before=1000, depth_after=5)
    assert data["items"][-1]["id"] == last.pk
    assert len(data["items"]) == 8


def test_errors_say_what_is_wrong(client, ids) -> None:
    response = client.get("/api/timeline", {"anchor": "abc"})
    assert response.status_code == 400 and "not an id" in response.json()["error"]
    assert client.get("/api/timeline", {"anchor": "999999"}).status_code == 404
    assert client.get("/api/timeline", {"q": "zebra unicorn"}).status_code == 404
    assert client.get("/api/timeline").status_code == 400
