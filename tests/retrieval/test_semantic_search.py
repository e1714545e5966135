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
from memory.retrieval.embeddings import index, store
from memory.retrieval.embeddings.model import DEFAULT_NAME, get_model
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
    assert model.version.startswith(DEFAULT_NAME + "@")
    vectors = model.embed(["refund totals", "", "Redis pool"])
    assert vectors.shape == (3, 256)
    assert np.allclose(np.linalg.norm(vectors[[0, 2]], axis=1), 1.0, atol=1e-5)
    assert not vectors[1].any()  # an empty text is a zero vector, never NaN


def test_the_bundled_pair_maps_its_int8_table_and_projects_both_halves() -> None:
    """The default is WordLlama paired with the distilled table: the int8 table stays mapped
    (its pages are the file's, not the heap's), its scales weigh its rows exactly as the
    float table would, and the pair's vector is the centred projection of both halves."""
    from memory.retrieval.embeddings.model import EmbeddingModel

    model = get_model()
    wordllama, minilm = model.parts  # type: ignore[union-attr]
    assert isinstance(minilm.table, np.memmap) and minilm.table.dtype == np.int8
    widened = EmbeddingModel(
        "f32",
        np.asarray(minilm.table, dtype=np.float32) * minilm.weights[:, None],
        minilm.tokenizer,
    )
    texts = ["partial refunds match checkout", "Redis pool exhausted under load"]
    assert np.allclose(minilm.embed(texts), widened.embed(texts), atol=1e-6)
    alpha = model.alpha  # type: ignore[union-attr]
    both = np.hstack(
        [np.sqrt(1 - alpha) * wordllama.embed(texts), np.sqrt(alpha) * minilm.embed(texts)]
    )
    expected = (both - model.centre) @ model.projection  # type: ignore[union-attr]
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert model.dim == 256 and np.allclose(model.embed(texts), expected, atol=1e-5)
    # Each half alone already relates the two refund texts more than refund and Redis.
    for part in (wordllama, minilm, model):
        a, b, c = part.embed([texts[0], "refund totals agree with checkout", texts[1]])
        assert a @ b > a @ c


def test_the_bundled_model_weighs_rare_tokens_over_filler() -> None:
    """idf pooling: a filler word moves a text's vector less than a content word does, and
    the weighting is named in the version (a change of it re-embeds every row). The
    WordLlama half of the bundled pair is the one weighted by idf."""
    assert "-idf" in get_model().version
    model = get_model().parts[0]  # type: ignore[union-attr]
    assert model.weights is not None
    ids = {
        word: model.tokenizer.encode(word, add_special_tokens=False).ids
        for word in ("the", "refund")
    }
    assert model.weights[ids["the"]].max() < model.weights[ids["refund"]].min()
    base, filler, content = model.embed(
        ["partial refunds match checkout", "the partial refunds match the checkout",
         "partial refunds match checkout totals"]
    )  # fmt: skip
    assert base @ filler > base @ content


def test_rows_of_the_plain_mean_version_are_re_embedded(rows: dict[str, int]) -> None:
    """A store embedded before the weighting (the older version string) is caught up by the
    sweep, and search then finds the rows with the current vectors."""
    model = get_model()
    old = model.version.replace("-idf1", "")
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
        assert row.model == model.version and len(bytes(row.vector)) == 256 * 2  # float16
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


def _tiny_model(folder: Path, dim: int = 16) -> None:
    """A static model in the model2vec layout, from the bundled tokenizer and a random table."""
    import wordllama
    from safetensors.numpy import save_file

    folder.mkdir()
    tokenizer = Path(wordllama.__file__).parent / "tokenizers" / "l2_supercat_tokenizer_config.json"
    (folder / "tokenizer.json").write_bytes(tokenizer.read_bytes())
    table = np.random.default_rng(1).standard_normal((32000, dim)).astype(np.float32)
    save_file({"embeddings": table}, str(folder / "model.safetensors"))


def test_a_model_change_re_embeds_in_the_background(
    rows: dict[str, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.retrieval.embeddings.tasks import embeddings_sweep_task

    old = get_model().version
    _tiny_model(tmp_path / "tiny")
    monkeypatch.setenv("CLAUDE_MEM_EMBEDDINGS_MODEL", str(tmp_path / "tiny"))
    new = get_model()
    assert new.version.startswith("local/tiny@") and new.dim == 16
    assert store.pending_count("observation", new.version) == len(ROWS)
    embeddings_sweep_task.call_local()
    assert set(Embedding.objects.values_list("model", flat=True)) == {new.version}
    assert Embedding.objects.count() == len(ROWS)
    assert len(bytes(Embedding.objects.first().vector)) == 16 * 2  # type: ignore[union-attr]
    # Search uses the new vectors (same dimension as the query), not the old model's.
    # (a random table: only a text identical to a row's is near it).
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


def test_the_shipped_token_weights_are_the_recall_sets_idf() -> None:
    """The weights file is what `python -m memory.retrieval.embeddings.model --rebuild-idf`
    makes from the benchmark's observation texts (documents only: no query or label)."""
    import gzip

    from memory.retrieval.embeddings import idf

    model = get_model().parts[0]  # type: ignore[union-attr]  (WordLlama's half)
    with gzip.open(idf._SET, "rt", encoding="utf-8") as f:
        observations = json.load(f)["observations"]
    texts = ["\n".join(p for p in (o["title"], o["narrative"]) if p)[:4000] for o in observations]
    weights = idf.compute(texts, model.tokenizer, model.table.shape[0])
    assert np.allclose(weights.astype(np.float16), idf.load(model.table.shape[0]), atol=1e-3)
    assert weights.min() >= 0 and weights.max() == pytest.approx(np.log(len(texts) + 1), rel=1e-4)


class _GivenKeywordList:
    """The SQLite backend, except that its keyword list is the one given (hand-made lists
    over the fixture's rows); vectors, hits and the relatedness reads are the real ones."""

    def __init__(self, ids: list[int], strict: bool) -> None:
        self.ranked = [(1.0 / n, "observation", pk) for n, pk in enumerate(ids, start=1)]
        self.strict = strict

    def keyword_ranked(self, query: SearchQuery) -> tuple[list[Any], bool]:
        return self.ranked, self.strict

    keyword = staticmethod(SqliteBackend.keyword)
    hits_by_ids = staticmethod(SqliteBackend.hits_by_ids)
    nearest = staticmethod(SqliteBackend.nearest)


def _hybrid_ids(text: str, backend: _GivenKeywordList) -> list[int]:
    query = SearchQuery(text=text, mode="hybrid", kinds=("observation",))
    return [hit.id for hit in hybrid.search_mode(backend, query)]  # type: ignore[arg-type]


def test_keyword_weight_ramps_with_the_heads_relatedness() -> None:
    low = hybrid.RELATEDNESS_CENTER - hybrid.RELATEDNESS_WIDTH / 2
    assert hybrid.keyword_weight(True, low - 0.01) == 0.0
    assert hybrid.keyword_weight(True, hybrid.RELATEDNESS_CENTER) == pytest.approx(0.5)
    assert hybrid.keyword_weight(True, low + hybrid.RELATEDNESS_WIDTH + 0.01) == 1.0
    assert hybrid.keyword_weight(False, 0.9) == hybrid.FALLBACK_WEIGHT


def test_a_paraphrase_keeps_its_semantic_top_hit(
    rows: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keyword hits that share only incidental words with a paraphrase (their vectors are
    far from the query's) lose their weight, and the vectors' first row stays first."""
    backend = _GivenKeywordList([rows["coupons"], rows["stripe"]], strict=False)
    embedded = hybrid.query_vector(SearchQuery(text=PARAPHRASE))
    assert embedded is not None
    assert hybrid.relatedness(backend.ranked, embedded) < hybrid.RELATEDNESS_CENTER
    assert _ids(text=PARAPHRASE, mode="semantic")[0] == rows["refunds"]
    assert _hybrid_ids(PARAPHRASE, backend)[0] == rows["refunds"]
    # With a fixed full weight (the ramp always at 1) the keyword head would have led.
    monkeypatch.setattr(hybrid, "RELATEDNESS_CENTER", -1.0)
    assert _hybrid_ids(PARAPHRASE, backend)[0] == rows["coupons"]


def test_a_keyword_query_keeps_its_keyword_top_hit(rows: dict[str, int]) -> None:
    """A keyword head related to the query by meaning keeps (most of) its weight: it leads
    even where the vectors put another row first."""
    text = "orders refunds duplicate"
    assert _ids(text=text, mode="semantic")[:2] == [rows["refunds"], rows["stripe"]]
    backend = _GivenKeywordList([rows["stripe"]], strict=True)
    embedded = hybrid.query_vector(SearchQuery(text=text))
    assert embedded is not None
    related = hybrid.relatedness(backend.ranked, embedded)
    assert hybrid.keyword_weight(True, related) >= 0.75
    assert _hybrid_ids(text, backend)[0] == rows["stripe"]


def test_relatedness_without_vectors_keeps_the_keyword_weight(rows: dict[str, int]) -> None:
    embedded = hybrid.query_vector(SearchQuery(text="refund rounding"))
    assert embedded is not None
    Embedding.objects.filter(object_id=rows["coupons"]).delete()
    assert hybrid.relatedness([(1.0, "observation", rows["coupons"])], embedded) == 1.0
