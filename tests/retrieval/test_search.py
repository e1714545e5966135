from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.models import Observation
from memory.retrieval.search.query import SearchQuery, fts_terms
from memory.retrieval.search.service import search
from tests.retrieval.retrieval_seed import seed

pytestmark = pytest.mark.django_db


@pytest.fixture
def ids() -> dict[str, list[int]]:
    return seed()


def _get(client, **params):  # type: ignore[no-untyped-def]
    response = client.get("/api/search", params)
    assert response.status_code == 200, response.content
    return response.json()["results"]


def test_best_match_first_with_highlighted_snippet(client, ids) -> None:
    results = _get(client, q="connection pool")
    titles = [r["title"] for r in results]
    assert "connection pool" in titles[0].lower()
    # All four rows holding both words, and nothing holding only one of them.
    assert {r["id"] for r in results if r["kind"] == "observation"} == {
        ids["observation"][0],
        ids["observation"][1],
        ids["observation"][6],
    }
    assert [r["kind"] for r in results].count("summary") == 1
    # The matches as [start, end) character offsets into a plain snippet: no markup in JSON.
    snippet, spans = results[0]["snippet"], results[0]["highlights"]
    assert spans and not {"«", "»", "<", "\ue000", "\ue001"} & set(snippet)
    assert {snippet[a:b].lower()[:4] for a, b in spans} <= {"conn", "pool"}
    assert {snippet[a:b].lower()[:4] for a, b in spans} == {"conn", "pool"}
    first = results[0]
    assert set(first) >= {
        "id",
        "kind",
        "title",
        "project",
        "created_at",
        "type",
        "tokens",
        "snippet",
    }
    assert first["tokens"] > 20


def test_title_match_outranks_narrative_match(client, ids) -> None:
    # "pool" is in the title of #0/#1/#6; "pool" only appears in the narrative of no other row,
    # but "checkout" is in the title of #1 and only in the narrative of #0.
    results = _get(client, q="checkout", kind="observation")
    assert results[0]["id"] == ids["observation"][1]
    assert ids["observation"][0] in [r["id"] for r in results[1:]]


def test_project_filter(client, ids) -> None:
    results = _get(client, q="connection", project="blog")
    assert results and {r["project"] for r in results} == {"blog"}


def test_type_filter_keeps_only_those_observations(client, ids) -> None:
    results = _get(client, type="bugfix")
    assert {r["id"] for r in results} == {ids["observation"][1], ids["observation"][5]}
    assert {r["kind"] for r in results} == {"observation"}
    assert {r["id"] for r in _get(client, q="fixed", type="bugfix,feature")} == {
        ids["observation"][1],
        ids["observation"][5],
    }


def test_concept_filter(client, ids) -> None:
    assert {r["id"] for r in _get(client, concept="DATABASE")} == {
        ids["observation"][0],
        ids["observation"][1],
    }


def test_file_filter_by_name_relative_and_absolute_path(client, ids) -> None:
    refactor = ids["observation"][4]
    assert {r["id"] for r in _get(client, file="models.py")} == {refactor}
    assert {r["id"] for r in _get(client, file="shop/orders/models.py")} == {refactor}
    assert {r["id"] for r in _get(client, file="/work/shop/shop/checkout.py")} == {
        ids["observation"][1]
    }
    assert _get(client, file="odels.py") == []


def test_date_range(client, ids) -> None:
    results = _get(client, since="2026-03-01T09:15:00Z", until="2026-03-01T09:35:00Z")
    assert [(r["kind"], r["id"]) for r in results] == [
        ("prompt", ids["prompt"][1]),
        ("observation", ids["observation"][3]),
        ("observation", ids["observation"][2]),
        ("summary", ids["summary"][0]),
    ]


def test_kind_filter_and_prompts_are_searchable(client, ids) -> None:
    results = _get(client, q="database connections", kind="prompt")
    assert [(r["kind"], r["id"], r["project"]) for r in results] == [
        ("prompt", ids["prompt"][0], "shop")
    ]


def test_without_text_newest_first_across_kinds(client, ids) -> None:
    results = _get(client, limit=3)
    assert [r["created_at"] for r in results] == sorted(
        (r["created_at"] for r in results), reverse=True
    )
    assert results[0]["id"] == ids["observation"][6]


def test_all_words_first_then_any_word(client, ids) -> None:
    # No row holds "flamingo": rather than nothing, rows with "retry" come back.
    results = _get(client, q="retry flamingo")
    assert results and results[0]["id"] == ids["observation"][2]


def test_prefix_and_phrase(client, ids) -> None:
    assert ids["observation"][2] in [r["id"] for r in _get(client, q="backof*")]
    assert _get(client, q='"pool connection"') == []
    assert _get(client, q='"connection pool" leak')[0]["id"] == ids["observation"][1]


def test_limit_and_offset_page_through(client, ids) -> None:
    everything = _get(client, q="connection", limit=100)
    page = _get(client, q="connection", limit=2, offset=1)
    assert [r["id"] for r in page] == [r["id"] for r in everything[1:3]]


@pytest.mark.parametrize(
    "text",
    [
        '"',
        "'",
        "-",
        "a - b",
        "foo.bar",
        "(",
        ")",
        "*",
        "**",
        "^pool",
        "pool:",
        "col:pool",
        "NOT",
        "pool NOT",
        "AND OR",
        "NEAR(pool checkout)",
        "pool +",
        "{}",
        "\\",
        "\x00",
        "🙂",
        "pool*checkout",
        '"unterminated',
    ],
)
def test_operator_characters_are_never_an_error(client, ids, text: str) -> None:
    response = client.get("/api/search", {"q": text})
    assert response.status_code == 200
    assert isinstance(response.json()["results"], list)


def test_punctuation_in_stored_text_matches_like_the_query(client, ids) -> None:
    assert _get(client, q="ADR-7")[0]["id"] == ids["observation"][3]
    assert _get(client, q="models.py")[0]["id"] == ids["observation"][4]


def test_bad_kind_and_limit_are_4xx_with_json(client, ids) -> None:
    response = client.get("/api/search", {"q": "x", "kind": "tweets"})
    assert response.status_code == 400 and "tweets" in response.json()["error"]
    assert client.get("/api/search", {"q": "x", "limit": 0}).status_code == 422
    assert client.get("/api/search", {"since": "yesterday-ish"}).status_code == 422


def test_index_follows_updates(ids) -> None:
    obs = Observation.objects.get(pk=ids["observation"][5])
    obs.title = "Fixed Atom feed timezone"
    obs.facts = ["Atom needs UTC"]
    obs.save()
    assert [h.id for h in search(SearchQuery(text="atom"))] == [obs.pk]
    assert search(SearchQuery(text="rss", kinds=("observation",))) == []


def test_fts_terms_quote_every_token() -> None:
    assert fts_terms('pool AND "a b" foo.bar connec* -x') == [
        '"pool"',
        '"AND"',
        '"a b"',
        '"foo.bar"',
        '"connec"*',
        '"-x"',
    ]
    assert fts_terms("!!! ... ---") == []


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(max_size=60))
def test_any_text_is_a_valid_query(client, text: str) -> None:
    response = client.get("/api/search", {"q": text})
    assert response.status_code == 200
    assert response.json()["results"] == [] or isinstance(response.json()["results"][0]["id"], int)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.lists(
        st.sampled_from([*'ab "*-().:^{}+', " OR ", " NEAR ", " NOT ", " AND ", "NEAR(", "pool"]),
        max_size=20,
    ).map("".join)
)
def test_operator_soup_is_a_valid_query(ids, text: str) -> None:
    assert isinstance(search(SearchQuery(text=text)), list)


def test_a_project_name_is_a_filter_not_a_hit(client) -> None:
    from memory.models import Session
    from tests.retrieval.retrieval_seed import T0

    session = Session.objects.create(session_id="z", project="zebracorn-app.v2")
    Observation.objects.create(
        session=session,
        project="zebracorn-app.v2",
        title="Tuned the cache",
        type="security_alert",
        created=T0,
    )
    Observation.objects.create(
        session=session, project="zebracorn-app.v2-old", title="Tuned the cache again", created=T0
    )
    assert _get(client, q="zebracorn") == []
    assert [r["title"] for r in _get(client, q="cache", project="zebracorn-app.v2")] == [
        "Tuned the cache"
    ]
    assert [r["title"] for r in _get(client, q="cache", type="security_alert")] == [
        "Tuned the cache"
    ]
    assert _get(client, q="cache", project="---") == []


def test_retrieval_endpoints_are_in_the_openapi_schema(client) -> None:
    paths = client.get("/api/openapi.json").json()["paths"]
    for path in [
        "/api/search",
        "/api/timeline",
        "/api/observations",
        "/api/outline",
        "/api/outline/unfold",
        "/api/outline/search",
        "/api/forget",
    ]:
        assert path in paths
    assert {p["name"] for p in paths["/api/search"]["get"]["parameters"]} >= {
        "q",
        "project",
        "type",
        "concept",
        "file",
        "since",
        "until",
        "kind",
        "limit",
    }


def test_get_observations_in_the_order_asked(client, ids) -> None:
    wanted = [ids["observation"][3], ids["observation"][0], 999999, ids["observation"][3]]
    body = client.get("/api/observations", {"ids": ",".join(map(str, wanted))}).json()
    assert [o["id"] for o in body["observations"]] == [ids["observation"][3], ids["observation"][0]]
    assert body["missing"] == [999999]
    first = body["observations"][0]
    assert set(first) >= {
        "id",
        "type",
        "title",
        "subtitle",
        "facts",
        "narrative",
        "concepts",
        "files_read",
        "files_modified",
        "project",
        "session",
        "created_at",
    }
    for bad in ["", "1,x", "1;2", "-3", "1.5", "١"]:
        response = client.get("/api/observations", {"ids": bad})
        assert response.status_code == 400 and response.json()["error"]
    assert client.get("/api/observations", {"ids": ",".join(["1"] * 201)}).status_code == 400


def test_search_command_prints_the_index(ids) -> None:
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("search", "connection", "pool", "--project", "shop", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith("3 result(s).")
    assert lines[0].split()[:5] == ["id", "when", "type", "project", "tokens"]
    assert lines[1].startswith(f"#{ids['observation'][1]} ") or lines[1].startswith(
        f"#{ids['observation'][0]} "
    )
    assert "~" in lines[1] and len(lines) == 5


@pytest.mark.parametrize(
    "url",
    [
        "/api/search?q=pool%00x",
        "/api/search?q=pool&project=sh%00op",
        "/api/context?project=sh%00op",
        "/api/observations/by-file?path=a%00b.py&project=shop",
        "/api/timeline?q=pool%00x",
    ],
)
def test_a_nul_in_a_query_is_a_clear_400_or_no_match_never_a_500(client, ids, url) -> None:
    """PostgreSQL takes no NUL in text (this runs in the team pass too); SQLite does."""
    response = client.get(url)
    assert response.status_code in (200, 400), response.content[:300]
    if response.status_code == 400:  # the API's own 400 shape, a sentence to act on
        assert response.json()["error"].strip(), response.json()
    forgot = client.post(
        "/api/forget", {"query": "pool\x00x", "dry_run": True}, content_type="application/json"
    )
    assert forgot.status_code in (200, 400) and (
        forgot.status_code == 200 or "NUL" in forgot.json()["detail"]
    )
