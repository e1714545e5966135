"""Search by meaning: embeddings next to their rows, the three modes, fusion, filters,
re-embedding on a model change, vectors following their rows, and the surfaces."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client

from memory.models import Embedding, Observation, Prompt, Session, Summary
from memory.retrieval.embeddings import index, store, transformer
from memory.retrieval.embeddings.model import DEFAULT_NAME, get_model, model_version
from memory.retrieval.search import hybrid
from memory.retrieval.search.hybrid import fuse
from memory.retrieval.search.query import SearchQuery
from memory.retrieval.search.service import search
from memory.retrieval.search.sqlite import SqliteBackend

pytestmark = pytest.mark.django_db

START = datetime(2026, 3, 1, tzinfo=UTC)
# (project, type, title, narrative, file)
ROWS = [
    ("shop", "bugfix", "Refunds reuse compute_total() so partial refunds match checkout",
     "Refund amounts were computed with their own rounding; the refund path now calls compute_total().", "shop/refunds.py"),
    ("shop", "feature", "Coupons expire at midnight in the store timezone",
     "Expiry compared in UTC made discounts end early for western stores.", "shop/coupons.py"),
    ("infra", "bugfix", "Redis connection pool exhausted under load",
     "Each request opened a client; a shared pool with max 50 connections fixed the spikes.", "infra/cache.py"),
    ("infra", "change", "Nightly Postgres backups moved to WAL archiving",
     "pg_dump took two hours and locked tables; continuous archiving replaced it.", "ops/backup.sh"),
    ("mobile", "bugfix", "App crashed when the camera permission was denied",
     "The scanner assumed access; a denied state shows an explanation now.", "app/scanner.tsx"),
    ("shop", "bugfix", "Stripe webhook retries created duplicate orders",
     "Idempotency key stored per event id; a second delivery is acknowledged and ignored.", "shop/webhooks.py"),
]  # fmt: skip
PARAPHRASE = "why did money given back to buyers disagree with what they paid at purchase"


@pytest.fixture
def rows() -> dict[str, int]:
    sessions = {
        p: Session.objects.create(session_id=f"s-{p}", project=p, started=START)
        for p in ("shop", "infra", "mobile")
    }
    ids = {}
    for i, (project, type_, title, narrative, path) in enumerate(ROWS):
        obs = Observation.objects.create(
            session=sessions[project], project=project, type=type_, title=title, narrative=narrative,
            files_modified=[path], created=START + timedelta(days=i),
        )  # fmt: skip
        ids[title.split()[0].lower()] = obs.pk
    store.embed_pending()
    return ids


def _ids(**kwargs: object) -> list[int]:
    return [hit.id for hit in search(SearchQuery(kinds=("observation",), **kwargs))]  # type: ignore[arg-type]


def test_the_bundled_model_loads_from_the_wheel_and_gives_unit_vectors() -> None:
    model = get_model()
    assert model.version == transformer.VERSION and model.version.startswith(DEFAULT_NAME + "@")
    vectors = model.embed(["refund totals", "", "Redis pool"])
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors[[0, 2]], axis=1), 1.0, atol=1e-3)
    assert not vectors[1].any()  # an empty text is a zero vector, never NaN


def test_the_bundled_weights_are_the_file_their_version_names() -> None:
    """A new export must change the version, so stored vectors of the old one are re-made."""
    assert transformer.weights_digest() == transformer.WEIGHTS_SHA256
    assert transformer.VERSION.endswith("@" + transformer.WEIGHTS_SHA256[:12])


def test_the_bundled_model_relates_texts_by_meaning() -> None:
    """A sentence encoder, not a bag of words: a paraphrase with no word in common is nearer
    than a text about something else, and batching (padding) does not change a vector."""
    model = get_model()
    refund, paraphrase, redis = model.embed(
        ["partial refunds match checkout totals",
         "money given back to buyers agrees with what they paid",
         "Redis connection pool exhausted under load"]
    )  # fmt: skip
    assert refund @ paraphrase > refund @ redis + 0.2
    (alone,) = model.embed(["Redis connection pool exhausted under load"])
    assert np.allclose(alone, redis, atol=1e-4)


def test_rows_of_an_earlier_model_are_re_embedded(rows: dict[str, int]) -> None:
    """A store embedded by an earlier model (another version string) is caught up by the
    sweep, and search then finds the rows with the current vectors."""
    model = get_model()
    old = "an-earlier-model@0"
    Embedding.objects.update(model=old)
    index.clear()
    assert store.pending_count("observation", model.version) == len(ROWS)
    assert store.embed_pending() == len(ROWS)
    assert set(Embedding.objects.values_list("model", flat=True)) == {model.version}
    assert _ids(text=PARAPHRASE, mode="semantic")[0] == rows["refunds"]


def test_every_row_kind_is_embedded_with_its_model_version(rows: dict[str, int]) -> None:
    session = Session.objects.get(project="shop")
    prompt = Prompt.objects.create(session=session, number=1, text="fix the refund rounding")
    summary = Summary.objects.create(session=session, project="shop", request="refund totals")
    assert store.embed_pending() == 2
    model = get_model()
    for kind, pk in (
        ("observation", rows["refunds"]),
        ("prompt", prompt.pk),
        ("summary", summary.pk),
    ):
        row = Embedding.objects.get(kind=kind, object_id=pk)
        assert row.model == model.version and len(bytes(row.vector)) == 384 * 2  # float16
    assert store.embed_pending() == 0  # nothing left to do


def test_semantic_finds_a_paraphrase_that_keyword_cannot(rows: dict[str, int]) -> None:
    assert rows["refunds"] not in _ids(text=PARAPHRASE, mode="keyword")[:1]
    assert _ids(text=PARAPHRASE, mode="semantic")[0] == rows["refunds"]
    assert rows["refunds"] in _ids(text=PARAPHRASE, mode="hybrid")[:2]


def test_keyword_matches_stay_first_in_hybrid(rows: dict[str, int]) -> None:
    assert _ids(text="webhook idempotency", mode="keyword")[0] == rows["stripe"]
    assert _ids(text="webhook idempotency", mode="hybrid")[0] == rows["stripe"]


def test_filters_hold_in_every_mode(rows: dict[str, int]) -> None:
    text = "things failing under heavy traffic"
    for mode in ("keyword", "semantic", "hybrid"):
        assert {
            Observation.objects.get(pk=pk).project
            for pk in _ids(text=text, mode=mode, project="infra")
        } <= {"infra"}
        assert set(_ids(text=text, mode=mode, types=("feature",))) <= {rows["coupons"]}
        assert set(_ids(text=text, mode=mode, file="cache.py")) <= {rows["redis"]}
        late = _ids(text=PARAPHRASE, mode=mode, since=START + timedelta(days=4))
        assert rows["refunds"] not in late
    # The filtered semantic scan still finds the right row inside the filter.
    assert (
        _ids(
            text="the cache server ran out of connections during traffic peaks",
            mode="semantic",
            project="infra",
        )[0]
        == rows["redis"]
    )
    assert _ids(text=PARAPHRASE, mode="semantic", project="shop")[0] == rows["refunds"]
    assert _ids(text=PARAPHRASE, mode="semantic", project="infra")[:1] != [rows["refunds"]]


def test_concept_and_kind_filters_hold_in_every_mode(rows: dict[str, int]) -> None:
    Observation.objects.filter(pk=rows["redis"]).update(concepts=["pooling"])
    Prompt.objects.create(
        session=Session.objects.get(project="shop"), number=1,
        text="refunded money does not match what buyers paid at checkout",
    )  # fmt: skip
    store.embed_pending()
    text = "things failing under heavy traffic"
    for mode in ("keyword", "semantic", "hybrid"):
        assert set(_ids(text=text, mode=mode, concept="Pooling")) <= {rows["redis"]}
        assert _ids(text="redis pool connections", mode=mode, concept="pooling") == [rows["redis"]]
        kinds = {
            hit.kind
            for hit in search(SearchQuery(text=PARAPHRASE, mode=mode, kinds=("prompt",)))  # type: ignore[arg-type]
        }
        assert kinds <= {"prompt"}
    assert (
        search(SearchQuery(text=PARAPHRASE, mode="semantic", kinds=("prompt",)))[0].kind == "prompt"
    )


def test_fusion_order_on_hand_made_lists() -> None:
    fused = [item for _, item in fuse(["a", "b", "c"], ["c", "a", "d"])]
    # a: 1/61 + 1/62 > c: 1/63 + 1/61 > b: 1/62 > d: 1/63
    assert fused == ["a", "c", "b", "d"]
    # A down-weighted first list lets the second list's head lead.
    fused = [item for _, item in fuse(["a", "b"], ["b", "c"], weights=(0.2, 1.0))]
    assert fused[0] == "b" and fused.index("c") < fused.index("a")
    scores = {item: score for score, item in fuse(["x"], ["x"])}
    assert scores["x"] == pytest.approx(2 / 61)
    # The small k that search uses (hybrid.RRF_K): 1 / (5 + rank), so rank 1 weighs 7/6 of
    # rank 2 (61/60 at k = 60), and a list's head leads unless the other list agrees lower.
    scores = {item: score for score, item in fuse(["a", "b"], ["c", "b"], k=5)}
    assert scores["b"] == pytest.approx(2 / 7)
    assert scores["a"] == pytest.approx(1 / 6) and scores["a"] / (1 / 7) == pytest.approx(7 / 6)


def test_no_text_is_newest_first_in_every_mode(rows: dict[str, int]) -> None:
    for mode in ("keyword", "semantic", "hybrid"):
        assert _ids(mode=mode)[0] == rows["stripe"]


def test_snippets_still_highlight_in_hybrid(rows: dict[str, int]) -> None:
    hits = search(SearchQuery(text="refund rounding", mode="hybrid"))
    assert hits[0].id == rows["refunds"] and hits[0].highlights
    assert "«" not in hits[0].snippet


def _local_model(folder: Path) -> None:
    """A local model folder in the bundled layout: the bundled files under another name
    (another version, the same vectors)."""
    folder.mkdir()
    (folder / "model.onnx").write_bytes(transformer.WEIGHTS.read_bytes())
    (folder / "tokenizer.json").write_bytes(transformer.TOKENIZER.read_bytes())


def test_a_model_change_re_embeds_in_the_background(
    rows: dict[str, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.retrieval.embeddings.tasks import embeddings_sweep_task

    old = get_model().version
    _local_model(tmp_path / "tiny")
    monkeypatch.setenv("CLAUDE_MEM_EMBEDDINGS_MODEL", str(tmp_path / "tiny"))
    new = get_model()
    assert new.version.startswith("local/tiny@") and new.dim == 384
    assert model_version() == new.version
    assert store.pending_count("observation", new.version) == len(ROWS)
    embeddings_sweep_task.call_local()
    assert set(Embedding.objects.values_list("model", flat=True)) == {new.version}
    assert Embedding.objects.count() == len(ROWS)
    assert len(bytes(Embedding.objects.first().vector)) == 384 * 2  # type: ignore[union-attr]
    # Search uses the new vectors (same dimension as the query), not the old model's.
    title = "Redis connection pool exhausted under load"
    assert (
        _ids(
            text=title
            + "\nEach request opened a client; a shared pool with max 50 connections fixed the spikes.",
            mode="semantic",
        )[0]
        == rows["redis"]
    )
    monkeypatch.delenv("CLAUDE_MEM_EMBEDDINGS_MODEL")
    assert get_model().version == old


def test_a_missing_configured_model_keeps_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_EMBEDDINGS_MODEL", str(tmp_path / "absent"))
    assert get_model().version.startswith(DEFAULT_NAME)
    assert "cannot be loaded" in caplog.text and "absent" in caplog.text


def test_vectors_follow_their_rows_however_rows_are_deleted(rows: dict[str, int]) -> None:
    def vectors(pk: int) -> int:
        return Embedding.objects.filter(kind="observation", object_id=pk).count()

    assert vectors(rows["refunds"]) == 1
    Observation.objects.filter(pk=rows["refunds"]).delete()  # the ORM
    assert vectors(rows["refunds"]) == 0
    with connection.cursor() as cursor:  # raw SQL, as pruning and retention may do
        cursor.execute("DELETE FROM memory_observation WHERE id = %s", [rows["redis"]])
    assert vectors(rows["redis"]) == 0
    prompt = Prompt.objects.create(
        session=Session.objects.get(project="mobile"), number=1, text="camera"
    )
    store.embed_pending()
    Session.objects.filter(project="mobile").delete()  # a session's cascade
    assert vectors(rows["app"]) == 0
    assert not Embedding.objects.filter(kind="prompt", object_id=prompt.pk).exists()
    # The vector index notices: a deleted row is never a semantic hit.
    assert rows["refunds"] not in _ids(text=PARAPHRASE, mode="semantic")


def test_forget_removes_the_vectors_too(rows: dict[str, int], client: Client) -> None:
    from memory.housekeeping.forget import ForgetRequest, observations_forget

    result = observations_forget(request=ForgetRequest(query="Refunds", dry_run=False))
    assert result.count == 1
    assert not Embedding.objects.filter(kind="observation", object_id=rows["refunds"]).exists()


def test_the_vector_index_refreshes_on_new_and_replaced_rows(rows: dict[str, int]) -> None:
    model = get_model()
    ids, _ = index.matrix("observation", model.version, model.dim)
    assert len(ids) == len(ROWS)
    obs = Observation.objects.create(
        session=Session.objects.get(project="shop"), project="shop", title="Loyalty points"
    )
    store.embed_rows("observation", [obs.pk])
    ids, _ = index.matrix("observation", model.version, model.dim)
    assert obs.pk in ids.tolist() and len(ids) == len(ROWS) + 1
    store.embed_rows("observation", [obs.pk])  # a re-embed replaces, never duplicates
    ids, _ = index.matrix("observation", model.version, model.dim)
    assert ids.tolist().count(obs.pk) == 1


def test_api_search_takes_a_mode(rows: dict[str, int], client: Client) -> None:
    def top(**params: str) -> list[int]:
        response = client.get("/api/search", params)
        assert response.status_code == 200, response.content
        return [r["id"] for r in response.json()["results"]]

    assert top(q=PARAPHRASE, mode="semantic")[0] == rows["refunds"]
    assert rows["refunds"] in top(q=PARAPHRASE)[:2]  # hybrid is the default
    assert client.get("/api/search", {"q": "x", "mode": "fuzzy"}).status_code in (400, 422)


def test_cmem_search_and_the_search_page_take_a_mode(rows: dict[str, int], client: Client) -> None:
    out = StringIO()
    call_command("search", *PARAPHRASE.split(), "--mode", "semantic", "--limit", "1", stdout=out)
    assert f"#{rows['refunds']} " in out.getvalue()
    page = client.get("/search/", {"q": PARAPHRASE, "mode": "semantic"})
    assert page.status_code == 200
    assert "Refunds reuse compute_total()" in page.content.decode()
    assert 'name="mode"' in page.content.decode()


def test_embeddings_status_and_backfill_command(rows: dict[str, int]) -> None:
    Embedding.objects.all().delete()
    out = StringIO()
    call_command("embeddings", "status", stdout=out)
    assert f"observation: {len(ROWS)} without" in out.getvalue()
    call_command("embeddings", "backfill", "--no-progress", stdout=out)
    assert f"embedded {len(ROWS)} row(s)" in out.getvalue()
    assert Embedding.objects.count() == len(ROWS)


def test_the_mcp_search_tool_passes_the_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    from memory.retrieval import mcp_server

    seen: dict[str, object] = {}

    def request(method: str, path: str, params: dict[str, object]) -> dict[str, object]:
        seen.update(params)
        return {"results": []}

    monkeypatch.setattr(mcp_server.worker, "request", request)
    mcp_server.search(query="refund", mode="semantic")
    assert seen["mode"] == "semantic"
    mcp_server.search(query="refund")
    assert seen["mode"] == "hybrid"
    assert json.dumps(seen)  # plain values only


class _GivenKeywordList:
    """The SQLite backend, except that its keyword list is the one given (hand-made lists
    over the fixture's rows); vectors, hits and the coverage reads are the real ones."""

    def __init__(self, ids: list[int]) -> None:
        self.ranked = [(1.0 / n, "observation", pk) for n, pk in enumerate(ids, start=1)]

    def keyword_ranked(self, query: SearchQuery) -> tuple[list[Any], bool]:
        return self.ranked, False

    keyword = staticmethod(SqliteBackend.keyword)
    hits_by_ids = staticmethod(SqliteBackend.hits_by_ids)
    nearest = staticmethod(SqliteBackend.nearest)
    term_coverage = staticmethod(SqliteBackend.term_coverage)


def _hybrid_ids(text: str, backend: Any) -> list[int]:
    query = SearchQuery(text=text, mode="hybrid", kinds=("observation",))
    return [hit.id for hit in hybrid.search_mode(backend, query)]


@pytest.fixture
def haystack(rows: dict[str, int]) -> dict[str, int]:
    """The fixture's rows among 400 others whose vectors are random directions: what noise
    looks like to a query, so that significance can be told from it (six rows alone cannot
    show what is usual)."""
    rng = np.random.default_rng(32)
    session = Session.objects.create(session_id="s-filler", project="filler", started=START)
    fillers = Observation.objects.bulk_create(
        Observation(session=session, project="filler", type="change", title=f"filler {n}",
                    narrative="", created=START - timedelta(days=1))
        for n in range(400)
    )  # fmt: skip
    vectors = rng.standard_normal((len(fillers), 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    model = get_model().version
    Embedding.objects.bulk_create(
        Embedding(kind="observation", object_id=row.pk, model=model,
                  vector=vec.astype(np.float16).tobytes())
        for row, vec in zip(fillers, vectors, strict=True)
    )  # fmt: skip
    index.clear()
    return rows


def test_keyword_weight_is_the_odds_of_a_content_word_being_held() -> None:
    assert hybrid.keyword_weight(0.0) == 0.0
    assert hybrid.keyword_weight(0.25) == pytest.approx(1 / 3)
    assert hybrid.keyword_weight(0.5) == hybrid.keyword_weight(0.9) == 1.0


def test_term_coverage_counts_the_content_words_a_row_holds(rows: dict[str, int]) -> None:
    cover = SqliteBackend.term_coverage
    stripe, coupons = ("observation", rows["stripe"]), ("observation", rows["coupons"])
    # "the" and "of" are filler; orders and duplicate are in the Stripe row, refunds is not.
    assert cover([stripe], "the duplicate of orders refunds") == pytest.approx(2 / 3)
    assert cover([coupons, stripe], "the duplicate of orders refunds") == pytest.approx(2 / 3)
    assert cover([coupons], "the duplicate of orders refunds") == 0.0
    assert cover([stripe], "") == 1.0 and cover([], "orders") == 1.0
    # Stemmed as the index stems (porter): "duplicates" holds "duplicate".
    assert cover([stripe], "duplicates") == 1.0


def test_significance_keeps_a_neighbour_that_stands_out_from_noise(
    haystack: dict[str, int],
) -> None:
    query = SearchQuery(text=PARAPHRASE, mode="semantic", kinds=("observation",))
    embedded = hybrid.query_vector(query)
    assert embedded is not None
    ranked = hybrid.semantic_ranked(SqliteBackend, query, 10, embedded=embedded)
    kept = hybrid.significant(ranked, embedded)
    assert kept[0][2] == haystack["refunds"]
    # Every random filler row is noise by construction: none passes.
    fillers = set(Observation.objects.filter(project="filler").values_list("pk", flat=True))
    assert not {pk for _, _, pk in kept} & fillers
    # A query about nothing stored: whatever its nearest rows, none stands out.
    noise = SearchQuery(text="zebras migrate across the savanna at dawn", kinds=("observation",))
    embedded = hybrid.query_vector(noise)
    assert embedded is not None
    assert (
        hybrid.significant(
            hybrid.semantic_ranked(SqliteBackend, noise, 10, embedded=embedded), embedded
        )
        == []
    )


def test_a_paraphrase_keeps_its_semantic_top_hit(
    haystack: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keyword hits that hold none of a paraphrase's content words lose their weight, and
    the vectors' first row stays first."""
    backend = _GivenKeywordList([haystack["coupons"], haystack["stripe"]])
    assert _ids(text=PARAPHRASE, mode="semantic")[0] == haystack["refunds"]
    assert _hybrid_ids(PARAPHRASE, backend)[0] == haystack["refunds"]
    # With a fixed full weight the keyword head would have led (ties go to keyword).
    monkeypatch.setattr(hybrid, "keyword_weight", lambda coverage: 1.0)
    assert _hybrid_ids(PARAPHRASE, backend)[0] == haystack["coupons"]


def test_a_keyword_query_keeps_its_keyword_top_hit(haystack: dict[str, int]) -> None:
    """A keyword head that holds the query's words keeps its full weight: it leads even
    where the vectors put another row first."""
    text = "orders refunds duplicate"
    assert _ids(text=text, mode="semantic")[0] == haystack["refunds"]
    backend = _GivenKeywordList([haystack["stripe"]])
    assert _hybrid_ids(text, backend)[0] == haystack["stripe"]


def test_hybrid_answers_as_keyword_when_no_neighbour_stands_out(
    haystack: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Everyday small talk is a little like every question: when no vector neighbour stands
    out from noise (`significant` keeps none; its own test is above), hybrid is exactly
    the keyword answer, so it never loses to it."""
    text = "store timezone discounts"
    keyword = _ids(text=text, mode="keyword")
    assert keyword
    monkeypatch.setattr(hybrid, "significant", lambda semantic, embedded, owner=None: [])
    assert _ids(text=text, mode="hybrid") == keyword


def test_rows_waiting_for_a_vector_are_said_and_found_by_keyword(
    rows: dict[str, int], client: Client
) -> None:
    """An import the sweep has not reached yet: semantic still answers its keyword hits,
    and every surface says how many rows wait."""
    session = Session.objects.get(project="shop")
    waiting = Observation.objects.create(
        session=session, project="shop", type="discovery", title="Giraffe invoices are rounded twice",
        narrative="Imported and not embedded yet.", created=START,
    )  # fmt: skip
    assert store.waiting() == 1
    assert waiting.pk in _ids(text="giraffe invoices", mode="semantic")
    body = client.get("/api/search", {"q": "giraffe invoices", "mode": "semantic"}).json()
    assert "1 row(s) have no vector yet" in body["note"]
    assert waiting.pk in [hit["id"] for hit in body["results"]]
    assert (
        "1 row(s) have no vector yet"
        in client.get("/search/", {"q": "giraffe", "mode": "hybrid"}).content.decode()
    )
    out, err = StringIO(), StringIO()
    call_command("search", "giraffe", "invoices", "--mode", "semantic", stdout=out, stderr=err)
    assert "1 row(s) have no vector yet" in err.getvalue() and "Giraffe" in out.getvalue()
    assert client.get("/api/search", {"q": "giraffe", "mode": "keyword"}).json()["note"] == ""
    store.embed_pending()
    assert store.waiting() == 0
    assert client.get("/api/search", {"q": "giraffe", "mode": "semantic"}).json()["note"] == ""


def test_the_noise_sample_is_the_viewers_own_in_team_mode(rows: dict[str, int]) -> None:
    """Another user's memory never moves a viewer's ranking: with an owner, the sample that
    says what noise looks like is drawn from that user's rows only."""
    from django.contrib.auth import get_user_model

    users = get_user_model()
    alice = users.objects.create(username="alice")
    bob = users.objects.create(username="bob")
    Session.objects.filter(project="shop").update(owner=alice)
    Session.objects.exclude(project="shop").update(owner=bob)
    model = get_model()
    everyone, stored = index.null_sample("observation", model.version, model.dim)
    mine, mine_stored = index.null_sample("observation", model.version, model.dim, alice.pk)
    assert stored == len(ROWS) and len(everyone) == len(ROWS)
    shop = Observation.objects.filter(project="shop").count()
    assert mine_stored == shop and len(mine) == shop


def test_hybrid_answers_the_nearest_rows_when_no_row_holds_the_words(
    haystack: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing stands out and nothing matches by keyword: hybrid still answers semantic's
    order rather than nothing."""
    text = "buyers reimbursed incorrectly"
    assert _ids(text=text, mode="keyword") == []
    monkeypatch.setattr(hybrid, "significant", lambda semantic, embedded, owner=None: [])
    assert _ids(text=text, mode="hybrid") == _ids(text=text, mode="semantic") != []
