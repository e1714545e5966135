"""PostgreSQL full-text search behind memory.retrieval.search.service.search (team mode)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from memory.models import Observation, ObservationFile, Prompt, Session, Summary
from memory.retrieval.search.postgres import tsquery_terms
from memory.retrieval.search.query import HIGHLIGHT_CLOSE, HIGHLIGHT_OPEN, SearchQuery
from memory.retrieval.search.service import search
from tests.factories import SessionFactory

pytestmark = [pytest.mark.django_db, pytest.mark.team, pytest.mark.usefixtures("pg_backend")]


def _obs(session: Session, title: str, **fields: object) -> Observation:
    return Observation.objects.create(
        session=session, project=session.project, title=title, **fields
    )


def test_finds_observations_by_stemmed_words_best_match_first() -> None:
    s = SessionFactory(project="github.com/acme/app", session_id="s1")
    narrative_only = _obs(s, "Tidy the settings page", narrative="The migrations were reordered.")
    in_title = _obs(s, "Squash migrations before release", narrative="Fewer files.")
    _obs(s, "Unrelated change", narrative="Nothing to see.")

    hits = search(SearchQuery(text="migration"))

    assert [h.id for h in hits] == [in_title.pk, narrative_only.pk]
    assert hits[0].kind == "observation"
    assert hits[0].score > hits[1].score > 0
    assert hits[0].project == "github.com/acme/app"
    assert hits[0].session == s.pk
    # ts_headline's markers become offsets: the snippet itself is plain text.
    assert hits[0].highlights
    assert all(hits[0].snippet[a:b].lower().startswith("migrat") for a, b in hits[0].highlights)
    assert HIGHLIGHT_OPEN not in hits[0].snippet and HIGHLIGHT_CLOSE not in hits[0].snippet


def test_path_words_and_identifiers_match_like_fts5() -> None:
    s = SessionFactory(project="github.com/acme/app", session_id="s1")
    hit = _obs(
        s,
        "Gate reads the index",
        files_read=["memory/search_postgres.py"],
        facts=["calls session_init"],
    )
    hits = search(SearchQuery(text="search_postgres.py"))
    assert [h.id for h in hits] == [hit.pk]
    assert hits[0].files == ["memory/search_postgres.py"]
    assert [h.id for h in search(SearchQuery(text="session init"))] == [hit.pk]


def test_summaries_and_prompts_are_found_and_kinds_filter() -> None:
    s = SessionFactory(project="github.com/acme/app", session_id="s1")
    summary = Summary.objects.create(
        session=s, project=s.project, request="Port the worker to PostgreSQL", learned="tsvector"
    )
    prompt = Prompt.objects.create(
        session=s, number=1, text="please move the worker onto postgresql"
    )
    obs = _obs(s, "PostgreSQL settings", narrative="DATABASES switch")

    kinds = {(h.kind, h.id) for h in search(SearchQuery(text="postgresql"))}
    assert kinds == {("summary", summary.pk), ("prompt", prompt.pk), ("observation", obs.pk)}
    only = search(SearchQuery(text="postgresql", kinds=("prompt",)))
    assert [(h.kind, h.id, h.type, h.project) for h in only] == [
        ("prompt", prompt.pk, "prompt", s.project)
    ]


def test_filters_project_type_concept_file_and_dates() -> None:
    a, b = (
        SessionFactory(project="github.com/acme/a", session_id="sa"),
        SessionFactory(project="github.com/acme/b", session_id="sb"),
    )
    old = _obs(
        a,
        "Cache fix",
        type="bugfix",
        concepts=["Caching"],
        created=timezone.now() - timedelta(days=10),
    )
    new = _obs(a, "Cache feature", type="feature", concepts=["gotcha"])
    other = _obs(b, "Cache elsewhere", type="bugfix")
    ObservationFile.objects.create(
        observation=new, project=a.project, path="memory/cache.py", role="modified"
    )
    Summary.objects.create(session=a, project=a.project, request="cache work")

    def ids(**kw: object) -> set[int]:
        return {h.id for h in search(SearchQuery(text="cache", **kw)) if h.kind == "observation"}

    assert ids(project="github.com/acme/b") == {other.pk}
    assert ids(types=("bugfix",)) == {old.pk, other.pk}
    assert ids(concept="caching") == {old.pk}
    assert ids(file="cache.py") == {new.pk}
    assert ids(file="memory/cache.py") == {new.pk}
    assert ids(file="ache.py") == set()
    assert ids(since=timezone.now() - timedelta(days=1)) == {new.pk, other.pk}
    assert ids(until=timezone.now() - timedelta(days=1)) == {old.pk}
    # Type filters drop summaries and prompts, as on SQLite.
    assert {h.kind for h in search(SearchQuery(text="cache", types=("bugfix",)))} == {"observation"}


def test_no_text_lists_newest_first_with_limit_and_offset() -> None:
    s = SessionFactory(project="github.com/acme/app", session_id="s1")
    now = timezone.now()
    made = [_obs(s, f"Row {i}", created=now - timedelta(minutes=i)) for i in range(5)]
    page = search(SearchQuery(kinds=("observation",), limit=2, offset=1))
    assert [h.id for h in page] == [made[1].pk, made[2].pk]
    assert page[0].snippet == ""


def test_phrases_prefixes_and_punctuation_read_like_fts5() -> None:
    s = SessionFactory(project="github.com/acme/app", session_id="s1")
    init = _obs(s, "session init hook", narrative="x")
    reversed_words = _obs(s, "init the session", narrative="y")
    compression = _obs(s, "Compression of events", narrative="")

    assert {h.id for h in search(SearchQuery(text='"session init"'))} == {init.pk}
    assert {h.id for h in search(SearchQuery(text="session init"))} == {init.pk, reversed_words.pk}
    assert [h.id for h in search(SearchQuery(text="compr*"))] == [compression.pk]
    assert search(SearchQuery(text="compr")) == []
    # Operators are literal text; `-` and `OR` are not syntax, as on SQLite.
    assert tsquery_terms("a OR -b") == ["('a')", "('or')", "('b')"]
    assert tsquery_terms("foo.bar pool*") == ["('foo' <-> 'bar')", "('pool':*)"]
    assert search(SearchQuery(text="!!! --- \x00")) == []


def test_all_words_first_then_any_word() -> None:
    s = SessionFactory(project="github.com/acme/app", session_id="s1")
    both = _obs(s, "retry with backoff", narrative="")
    one = _obs(s, "retry once", narrative="")
    assert [h.id for h in search(SearchQuery(text="retry backoff"))] == [both.pk]
    assert {h.id for h in search(SearchQuery(text="retry flamingo"))} == {both.pk, one.pk}


def test_search_uses_the_gin_index() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(
            "EXPLAIN SELECT id FROM memory_observation WHERE search_vector @@ to_tsquery('english', 'cache')"
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "memory_observation_search_gin" in plan


def test_tokens_estimate_what_fetching_costs() -> None:
    s = SessionFactory(project="github.com/acme/app", session_id="s1")
    obs = _obs(s, "Token estimate", narrative="n" * 400, facts=["f" * 40])
    [hit] = search(SearchQuery(text="token estimate"))
    assert abs(hit.tokens - obs.fetch_tokens) <= 3


# --- the bounded ranking (issue 33): windows of the newest rows, grown until enough match ---


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows of 10 ids and a floor of 3 matches, so 60 rows span several windows."""
    from memory.retrieval.search import postgres

    monkeypatch.setattr(postgres, "WINDOW_FIRST", 10)
    monkeypatch.setattr(postgres, "RANK_FLOOR", 3)


def _history(session: Session, count: int) -> list[Observation]:
    now = timezone.now()
    return [
        _obs(session, f"Routine step {i}", narrative="cache warmed", created=now - timedelta(minutes=count - i))
        for i in range(count)
    ]  # fmt: skip


@pytest.mark.usefixtures("small_windows")
def test_a_rare_term_older_than_every_window_is_still_the_best_row() -> None:
    s = SessionFactory(project="github.com/acme/app", session_id="s1")
    oldest = _obs(s, "Flamingo protocol decided", created=timezone.now() - timedelta(days=9))
    _history(s, 60)
    assert [h.id for h in search(SearchQuery(text="flamingo"))] == [oldest.pk]
    # Every word, then any word: the fallback widens the windows the same way.
    assert [h.id for h in search(SearchQuery(text="flamingo pelican"))] == [oldest.pk]


@pytest.mark.usefixtures("small_windows")
def test_a_common_term_is_ranked_among_its_newest_matches_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The bound is real: a row holding the word in its title (the best ts_rank) but older
    than the newest RANK_FLOOR matches is not ranked."""
    s = SessionFactory(project="github.com/acme/app", session_id="s1")
    old_best = _obs(s, "Cache cache cache", created=timezone.now() - timedelta(days=9))
    rows = _history(s, 60)
    found = [h.id for h in search(SearchQuery(text="cache", limit=5))]
    assert old_best.pk not in found
    assert len(found) == 5 and set(found) <= {r.pk for r in rows[-10:]}
    # With a floor above the table's matches it leads.
    from memory.retrieval.search import postgres

    monkeypatch.setattr(postgres, "RANK_FLOOR", 1000)
    assert search(SearchQuery(text="cache", limit=5))[0].id == old_best.pk


@pytest.mark.usefixtures("small_windows")
def test_the_windows_grow_past_other_owners_rows_and_never_show_them() -> None:
    from django.contrib.auth import get_user_model

    from memory.team.scope import viewer_scope

    users = get_user_model().objects
    alice, bob = users.create_user("alice"), users.create_user("bob")
    mine = SessionFactory(project="github.com/acme/app", session_id="sa", owner=alice)
    theirs = SessionFactory(project="github.com/acme/app", session_id="sb", owner=bob)
    # Alice's rows are the oldest; Bob's fill every recent window with the same word.
    alices = [_obs(mine, f"Cache note {i}", created=timezone.now() - timedelta(days=9)) for i in range(4)]  # fmt: skip
    _history(theirs, 60)
    with viewer_scope(user_id=alice.pk, staff=False):
        found = {h.id for h in search(SearchQuery(text="cache"))}
        assert found == {o.pk for o in alices}
        assert search(SearchQuery(text="warmed")) == []  # only Bob's rows hold it
    with viewer_scope(user_id=bob.pk, staff=False):
        assert not {h.id for h in search(SearchQuery(text="cache"))} & found


def test_quotes_make_a_phrase_and_minus_is_a_word_as_on_sqlite() -> None:
    """The query language is the FTS5 path's (`tsquery_terms`), not websearch_to_tsquery's:
    that one has no prefix (`compr*`) and would read `-x` and `or` as operators on
    PostgreSQL only."""
    s = SessionFactory(project="github.com/acme/app", session_id="s1")
    phrase = _obs(s, "retry lock held", narrative="")
    apart = _obs(s, "lock before retry", narrative="")
    assert [h.id for h in search(SearchQuery(text='"retry lock"'))] == [phrase.pk]
    assert {h.id for h in search(SearchQuery(text="retry lock"))} == {phrase.pk, apart.pk}
    # `-lock` is the word "lock": both rows hold every word.
    assert {h.id for h in search(SearchQuery(text="retry -lock"))} == {phrase.pk, apart.pk}


def test_a_selective_owner_is_served_by_the_session_index_without_windows() -> None:
    """An owner of under a tenth of the sessions: one statement over the whole table,
    the session index free to serve the scope; still only their rows."""
    from django.contrib.auth import get_user_model
    from django.test.utils import CaptureQueriesContext

    from memory.team.scope import viewer_scope

    users = get_user_model().objects
    alice, bob = users.create_user("alice"), users.create_user("bob")
    mine = SessionFactory(project="github.com/acme/app", session_id="sa", owner=alice)
    theirs = [SessionFactory(project="github.com/acme/app", owner=bob) for _ in range(19)]
    old = _obs(mine, "Cache note", created=timezone.now() - timedelta(days=9))
    for session in theirs:
        _history(session, 3)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_session")
    with viewer_scope(user_id=alice.pk, staff=False), CaptureQueriesContext(connection) as ctx:
        assert [h.id for h in search(SearchQuery(text="cache"))] == [old.pk]
    windows = [q["sql"] for q in ctx.captured_queries if "search_vector @@" in q["sql"]]
    assert windows and not any("o.id >" in sql or "+ 0" in sql for sql in windows)
