"""The consolidation pass's offline rules, its limits (people's rows, undone changes, dry
runs, never deleting), demotion, the bounded window, the command and the schedule."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memory.curation.consolidation import candidates
from memory.curation.consolidation.run import consolidation_run, last_pass
from memory.curation.corrections import observation_mark, revision_undo
from memory.curation.tasks import consolidation_when_due
from memory.models import Observation, ObservationRevision
from tests.curation.consolidation_support import fresh, obs, session

pytestmark = pytest.mark.django_db

CURRENT, SUPERSEDED = Observation.Status.CURRENT, Observation.Status.SUPERSEDED


@pytest.fixture(autouse=True)
def _rules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_CONSOLIDATE", "rules")


def _duplicates(sess, *, days: tuple[float, ...] = (3, 2, 1)) -> list[Observation]:
    return [
        obs(
            sess,
            f"Checkout total rounded before tax{'!' * n}",
            narrative="The checkout rounds the subtotal before adding tax, so totals are off by a cent."
            + (" Seen in refunds." if n == 1 else ""),
            files=("shop/checkout.py",),
            days_ago=d,
        )
        for n, d in enumerate(days)
    ]


# -- duplicates ---------------------------------------------------------------------------------
def test_near_duplicates_fold_into_the_newest_complete_row_with_revisions() -> None:
    sess = session()
    old, richer, newest = _duplicates(sess)
    report = consolidation_run()
    assert report.applied == 2 and report.mode == "rules"
    # The newest is as complete as the richest (within 80%): it is kept.
    assert fresh(newest).status == CURRENT
    for row in (old, richer):
        row = fresh(row)
        assert row.status == SUPERSEDED and row.superseded_by_id == newest.pk
        assert row.status_reason == f"duplicate of #{newest.pk}"
        revision = ObservationRevision.objects.get(observation=row)
        assert revision.actor == "consolidation" and revision.batch == report.batch
        assert revision.action == "supersede" and revision.reason == f"duplicate of #{newest.pk}"
    # The links to the originals: the kept row's `supersedes`.
    assert set(fresh(newest).supersedes.values_list("pk", flat=True)) == {old.pk, richer.pk}
    assert set(Observation.objects.briefed("shop").values_list("pk", flat=True)) == {newest.pk}
    assert Observation.objects.count() == 3  # never deletes


def test_a_much_fuller_older_row_is_kept_over_a_thin_newer_repeat() -> None:
    sess = session()
    full = obs(
        sess,
        "Checkout total rounded before tax",
        narrative="Rounds the subtotal before tax; refunds, invoices and the CSV export disagree by a cent.",
        files=("c.py",),
        days_ago=2,
    )
    thin = obs(
        sess,
        "Checkout total rounded before tax",
        narrative="Rounds early.",
        files=("c.py",),
        days_ago=1,
    )
    consolidation_run()
    assert fresh(thin).superseded_by_id == full.pk and fresh(full).status == CURRENT


def test_distinct_rows_on_one_file_and_repeats_on_other_files_are_not_folded() -> None:
    sess = session()
    obs(sess, "Fix login bug in the auth form", files=("auth.py",), type="bugfix", days_ago=2)
    obs(sess, "Fix logout bug in the auth form", files=("auth.py",), type="bugfix", days_ago=1)
    obs(sess, "Cache warmed at start", narrative="warm", files=("a.py",), days_ago=2)
    obs(sess, "Cache warmed at start", narrative="warm", files=("b.py",), days_ago=1)
    obs(sess, "Cache warmed at start", narrative="warm", type="feature", files=("a.py",))
    report = consolidation_run()
    assert report.changes == [] and report.applied == 0
    assert Observation.objects.exclude(status=CURRENT).count() == 0


def test_embedding_cosine_joins_rephrased_duplicates_when_vectors_exist() -> None:
    sess = session()
    a = obs(sess, "Tax rounding wrong in checkout", narrative="alpha beta gamma", days_ago=2)
    b = obs(sess, "Checkout tax rounding broken", narrative="delta epsilon zeta", days_ago=1)
    window = candidates.window(project="shop", owner_id=None)
    assert consolidation_run(dry_run=True).changes == []  # words alone: too different
    np = pytest.importorskip("numpy")
    unit = np.ones(4, dtype=np.float32) / 2.0
    window.vectors = {a.pk: unit, b.pk: unit}
    from memory.curation.consolidation.plan import Plan
    from memory.curation.consolidation.rules import plan_rules

    plan = Plan(project="shop")
    plan_rules(window, plan)
    assert [(c.observation_id, c.superseded_by) for c in plan.changes] == [(a.pk, b.pk)]


def test_a_persons_rows_are_never_changed_and_are_kept_when_they_repeat() -> None:
    sess = session()
    edited = obs(
        sess,
        "Checkout total rounded before tax",
        narrative="rounds early",
        files=("c.py",),
        days_ago=3,
        person_edited=True,
    )
    written = obs(
        sess,
        "Checkout total rounded before tax",
        narrative="rounds early",
        files=("c.py",),
        days_ago=2,
        origin="user",
    )
    observer = obs(
        sess,
        "Checkout total rounded before tax",
        narrative="rounds early",
        files=("c.py",),
        days_ago=1,
    )
    pinned = obs(sess, "Old thing nobody recalls", days_ago=100, pinned=True)
    report = consolidation_run()
    assert fresh(edited).status == CURRENT and fresh(written).status == CURRENT
    assert fresh(pinned).demoted is False
    # The observer's repeat folds into a person's row (the person's row is the keeper).
    assert fresh(observer).superseded_by_id in {edited.pk, written.pk}
    assert report.applied == 1
    assert not ObservationRevision.objects.filter(
        observation__in=[edited, written, pinned]
    ).exists()


# -- reversed decisions -------------------------------------------------------------------------
def test_a_newer_decision_that_reverses_an_older_one_on_the_same_file_supersedes_it() -> None:
    sess = session()
    old = obs(
        sess,
        "Use memcached for the session cache",
        type="decision",
        files=("settings.py",),
        days_ago=5,
    )
    other = obs(
        sess, "Use gzip for API responses", type="decision", files=("settings.py",), days_ago=4
    )
    new = obs(
        sess,
        "Session cache moved to Redis",
        narrative="Switched the session cache to Redis instead of memcached: memcached lost keys.",
        type="decision",
        files=("settings.py",),
        days_ago=1,
    )
    consolidation_run()
    old = fresh(old)
    assert old.status == SUPERSEDED and old.superseded_by_id == new.pk
    assert old.status_reason.startswith(f"reversed by #{new.pk}")
    assert fresh(other).status == CURRENT  # same file, another subject
    assert fresh(new).status == CURRENT


def test_same_topic_reversal_supersedes_and_no_reversal_words_changes_nothing() -> None:
    sess = session()
    old = obs(sess, "Deploys go through Jenkins", type="decision", topic="deploy", days_ago=3)
    new = obs(
        sess,
        "Deploys: GitHub Actions",
        narrative="We no longer deploy from Jenkins.",
        type="decision",
        topic="deploy",
        days_ago=1,
    )
    plain_old = obs(
        sess, "Use black for formatting", type="decision", files=("pyproject.toml",), days_ago=3
    )
    obs(
        sess,
        "Use ruff format for formatting",
        type="decision",
        files=("pyproject.toml",),
        days_ago=1,
    )
    consolidation_run()
    assert fresh(old).superseded_by_id == new.pk
    assert fresh(plain_old).status == CURRENT


def test_a_reversal_reaches_an_old_decision_on_a_busy_file_past_the_bucket() -> None:
    sess = session()
    redis = obs(
        sess, "Use Redis for the rate cache", type="decision", files=("cache.py",), days_ago=60
    )
    theme_only = obs(
        sess,
        "Cache entries expire with the tariff",
        type="decision",
        files=("cache.py",),
        days_ago=59,
    )
    # More distinct rows on the file than a bucket holds (BUCKET_MAX), all newer.
    for n in range(candidates.BUCKET_MAX + 10):
        obs(
            sess,
            f"Lane {n} quote read word{n}x",
            narrative=f"lookup {n} detail{n}y",
            files=("cache.py",),
            days_ago=50 - n / 10,
        )
    new = obs(
        sess,
        "Rate cache is now in-process (cachetools)",
        narrative="Redis dropped: the rate cache no longer uses Redis.",
        type="decision",
        files=("cache.py",),
        days_ago=1,
    )
    consolidation_run()
    redis = fresh(redis)
    assert redis.status == SUPERSEDED and redis.superseded_by_id == new.pk
    assert redis.status_reason == f"reversed by #{new.pk} (“no longer”)"
    # Same file, one shared word ("cache"): a theme, not the subject.
    assert fresh(theme_only).status == CURRENT and fresh(new).status == CURRENT


def test_reversal_words_of_a_folded_repeat_still_reverse_through_the_row_that_kept_it() -> None:
    sess = session()
    old = obs(
        sess,
        "Use Celery beat for the nightly sync",
        type="decision",
        files=("sync.py",),
        days_ago=9,
    )
    repeat = obs(
        sess,
        "Nightly sync runs from cron",
        narrative="The nightly sync is a cron job, no longer Celery beat.",
        type="decision",
        files=("sync.py",),
        days_ago=3,
    )
    kept = obs(
        sess,
        "Nightly sync runs from cron",
        narrative="The nightly sync is a cron job calling the sync command at two.",
        type="decision",
        files=("sync.py",),
        days_ago=1,
    )
    consolidation_run()
    assert fresh(repeat).superseded_by_id == kept.pk  # folded: same title, close text
    old = fresh(old)
    assert old.status == SUPERSEDED and old.superseded_by_id == kept.pk
    assert old.status_reason == f"reversed by #{kept.pk} (“no longer”)"


# -- changed values and fixed bugs ----------------------------------------------------------------
def test_a_newer_change_saying_a_value_changed_supersedes_the_row_stating_it() -> None:
    sess = session()
    ttl = obs(sess, "Rate cache TTL is 15 minutes", files=("rates/cache.py",), days_ago=9)
    keyed = obs(sess, "How rate cache entries are keyed", files=("rates/cache.py",), days_ago=8)
    bucket = obs(
        sess, "Rate cache key uses a 500g weight bucket", files=("rates/cache.py",), days_ago=8
    )
    bound = obs(
        sess,
        "Rate cache TTL must stay below the 2 hour tariff refresh",
        files=("rates/cache.py",),
        days_ago=8,
    )
    elsewhere = obs(sess, "Rate cache TTL is 15 minutes", files=("docs/cache.md",), days_ago=8)
    raised = obs(
        sess,
        "Rate cache TTL raised to 1 hour",
        narrative="Tariffs change nightly; a longer TTL halves the carrier calls.",
        type="change",
        files=("rates/cache.py",),
        days_ago=1,
    )
    consolidation_run()
    ttl = fresh(ttl)
    assert ttl.status == SUPERSEDED and ttl.superseded_by_id == raised.pk
    assert ttl.status_reason == (
        f"superseded: newer change #{raised.pk} on the same file and subject says “raised to”"
    )
    # Near misses: the same theme without the subject, a number but another subject, the
    # subject among other things, the same words on another file.
    for kept in (keyed, bucket, bound, elsewhere, raised):
        assert fresh(kept).status == CURRENT, kept.title


def test_a_change_to_a_broader_subject_leaves_a_narrower_stated_value_alone() -> None:
    sess = session()
    ttl = obs(
        sess, "Rate cache TTL raised to 1 hour", type="change", files=("cache.py",), days_ago=5
    )
    lru = obs(
        sess,
        "Rate cache is now an in-process 1 hour LRU",
        narrative="cachetools TTLCache in each worker.",
        type="change",
        files=("cache.py",),
        days_ago=1,
    )
    consolidation_run()
    # "rate cache" changed, not "rate cache TTL": both rows stay.
    assert fresh(ttl).status == CURRENT and fresh(lru).status == CURRENT


def test_a_removed_pin_supersedes_the_pin_and_not_what_else_names_the_package() -> None:
    sess = session()
    pinned = obs(sess, "Pinned httpx to 0.27", type="change", files=("pyproject.toml",), days_ago=9)
    uses = obs(
        sess,
        "Carrier clients use httpx with one shared client",
        type="decision",
        files=("pyproject.toml",),
        days_ago=8,
    )
    hedged = obs(
        sess,
        "httpx 0.27 pin probably needed for the proxy",
        files=("pyproject.toml",),
        days_ago=8,
    )
    removed = obs(
        sess,
        "Removed the httpx 0.27 pin",
        narrative="The proxy bug is fixed upstream.",
        type="change",
        files=("pyproject.toml",),
        days_ago=1,
    )
    report = consolidation_run()
    assert fresh(pinned).superseded_by_id == removed.pk
    assert "“Removed”" in fresh(pinned).status_reason
    assert fresh(uses).status == CURRENT  # names the package, not the pin
    # A guess is not a stated value: the value rule leaves it alone (the confirmation rule
    # asks for a fix or change that settles it, and this one does).
    assert fresh(hedged).status != Observation.Status.ABANDONED
    assert {c.observation_id for c in report.changes} <= {pinned.pk, hedged.pk}


def test_a_value_change_on_other_files_or_an_older_change_supersedes_nothing() -> None:
    sess = session()
    five = obs(sess, "Carrier timeout set to 5s", type="change", files=("settings.py",), days_ago=5)
    obs(sess, "Carrier timeout raised to 10s", type="change", files=("other.py",), days_ago=1)
    later = obs(
        sess, "Carrier timeout is 30s in staging", files=("settings.py",), days_ago=0.5
    )  # newer than any change: nothing says it changed after
    consolidation_run()
    assert fresh(five).status == CURRENT and fresh(later).status == CURRENT


def test_a_reported_bug_is_superseded_by_its_later_fix_and_not_by_another_fix() -> None:
    sess = session()
    bug = obs(
        sess,
        "Quote form accepts negative weights without error",
        narrative="The weight field is not validated: -1 gives a quote.",
        files=("web/QuoteForm.tsx",),
        days_ago=5,
    )
    other_bug = obs(
        sess,
        "Quote form crashes on an empty zip",
        files=("web/QuoteForm.tsx",),
        days_ago=5,
    )
    plain = obs(sess, "Quote form sends weights in grams", files=("web/QuoteForm.tsx",), days_ago=5)
    fix = obs(
        sess,
        "Quote form rejects negative weights",
        narrative="The weight field has min=1; the API answers 422 for negative weights.",
        type="bugfix",
        files=("web/QuoteForm.tsx",),
        days_ago=1,
    )
    consolidation_run()
    bug = fresh(bug)
    assert bug.status == SUPERSEDED and bug.superseded_by_id == fix.pk
    assert bug.status_reason.startswith(f"fixed by #{fix.pk}: a later bugfix")
    assert fresh(other_bug).status == CURRENT  # same form, another bug
    assert fresh(plain).status == CURRENT  # not a defect


# -- refuted hypotheses -------------------------------------------------------------------------
def test_a_hypothesis_a_later_row_contradicts_is_abandoned() -> None:
    sess = session()
    guess = obs(
        sess,
        "Login timeout caused by the connection pool",
        certainty="hypothesis",
        files=("db.py",),
        days_ago=3,
    )
    obs(
        sess,
        "Login timeout traced to DNS",
        narrative="The connection pool was ruled out: the timeout was actually a DNS retry.",
        files=("db.py",),
        days_ago=1,
    )
    consolidation_run()
    guess = fresh(guess)
    assert guess.status == Observation.Status.ABANDONED
    assert "contradicted by" in guess.status_reason and "ruled out" in guess.status_reason
    assert guess.superseded_by_id is None


def test_hedged_observer_row_and_a_confirmed_fix_naming_another_cause() -> None:
    sess = session()
    hedged = obs(
        sess,
        "Flaky export test",
        narrative="The flake is probably the timezone of the CI runner.",
        files=("export.py",),
        days_ago=4,
    )
    obs(
        sess,
        "Fix flaky export test",
        narrative="The flake was caused by a shared temp directory between workers; each test gets its own now.",
        type="bugfix",
        certainty="confirmed",
        files=("export.py",),
        days_ago=1,
    )
    confirmed_guess = obs(
        sess, "Slow search suspect the missing index", files=("search.py",), days_ago=4
    )
    fix = obs(
        sess,
        "Added the missing index to search",
        narrative="Search is fast: the missing index was the cause.",
        type="bugfix",
        certainty="confirmed",
        files=("search.py",),
        days_ago=1,
    )
    consolidation_run()
    assert fresh(hedged).status == Observation.Status.ABANDONED
    assert "names another cause" in fresh(hedged).status_reason
    # The later fix agrees with the guess: the guess is settled, superseded by the fix (not
    # abandoned: it was right).
    confirmed_guess = fresh(confirmed_guess)
    assert confirmed_guess.status == SUPERSEDED and confirmed_guess.superseded_by_id == fix.pk
    assert confirmed_guess.status_reason.startswith(f"settled by #{fix.pk}")


def test_a_later_row_denying_what_the_guess_is_built_on_abandons_it() -> None:
    sess = session()
    guess = obs(
        sess,
        "test_quote_timeout flakiness probably due to network access",
        narrative="Suspect an unrecorded HTTP request in the timeout test.",
        files=("tests/conftest.py",),
        days_ago=4,
    )
    fix = obs(
        sess,
        "test_quote_timeout flake was a leaked frozen-time fixture",
        narrative="Not a network call: a freezegun fixture leaked between tests.",
        type="bugfix",
        files=("tests/conftest.py",),
        days_ago=1,
    )
    consolidation_run()
    guess = fresh(guess)
    assert guess.status == Observation.Status.ABANDONED
    assert guess.status_reason == f"contradicted by #{fix.pk} (“Not a network”)"


def test_a_guess_the_later_fix_confirms_is_superseded_not_abandoned() -> None:
    sess = session()
    guess = obs(
        sess,
        "Login fails, probably the token is not refreshed",
        files=("auth.py",),
        days_ago=4,
    )
    fix = obs(
        sess,
        "Login token not refreshed before expiry: fixed",
        narrative="The refresh ran after the expiry check; it runs first now.",
        type="bugfix",
        files=("auth.py",),
        days_ago=1,
    )
    consolidation_run()
    guess = fresh(guess)
    # "not refreshed" in both: the guess denied it too, so this confirms, not refutes.
    assert guess.status == SUPERSEDED and guess.superseded_by_id == fix.pk
    assert guess.status_reason.startswith(f"settled by #{fix.pk}: a later bugfix")


def test_a_guess_is_not_confirmed_by_a_discovery_or_by_a_fix_of_another_subject() -> None:
    sess = session()
    guess = obs(
        sess,
        "Suspect tariff CSV read into memory at once",
        files=("workers/sync.py",),
        days_ago=6,
    )
    obs(sess, "Tariff CSV is 40 MB", narrative="Read into memory it takes 300 MB.",
        files=("workers/sync.py",), days_ago=3)  # fmt: skip
    obs(sess, "Tariff sync logs row counts", type="change", files=("workers/sync.py",), days_ago=2)
    obs(sess, "Tariff CSV streamed row by row", type="refactor", files=("other.py",), days_ago=2)
    consolidation_run()
    assert fresh(guess).status == CURRENT
    streamed = obs(
        sess,
        "Tariff CSV streamed row by row",
        narrative="The sync no longer reads the whole tariff CSV into memory.",
        type="refactor",
        files=("workers/sync.py",),
        days_ago=1,
    )
    consolidation_run()
    assert fresh(guess).superseded_by_id == streamed.pk


# -- demotion -------------------------------------------------------------------------------------
def test_rows_never_recalled_for_weeks_are_demoted_not_the_pinned_or_recalled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_DEMOTE_AFTER_WEEKS", "8")
    sess = session()
    stale = obs(sess, "Stale row about the old build", days_ago=70)
    recalled = obs(
        sess, "Recalled row", days_ago=70, last_recalled=timezone.now() - timedelta(days=3)
    )
    long_ago = obs(
        sess, "Recalled long ago", days_ago=90, last_recalled=timezone.now() - timedelta(days=60)
    )
    pinned = obs(sess, "Pinned row", days_ago=70, pinned=True)
    person = obs(sess, "A person's row", days_ago=70, origin="user")
    young = obs(sess, "Young row", days_ago=20)
    consolidation_run()
    assert fresh(stale).demoted and fresh(long_ago).demoted
    assert fresh(stale).status == CURRENT  # out of the index, still searchable
    assert not any(fresh(r).demoted for r in (recalled, pinned, person, young))
    assert stale.pk not in Observation.objects.briefed("shop").values_list("pk", flat=True)
    monkeypatch.setenv("CLAUDE_MEM_DEMOTE_AFTER_WEEKS", "0")
    obs(sess, "Another stale row", days_ago=400)
    assert consolidation_run().changes == []


# -- dry run, undo, never again ------------------------------------------------------------------
def test_dry_run_changes_nothing_and_says_what_it_would_do() -> None:
    sess = session()
    rows = _duplicates(sess)
    stale = obs(sess, "Stale", days_ago=100)
    before = list(Observation.objects.order_by("pk").values())
    report = consolidation_run(dry_run=True)
    assert {c.observation_id for c in report.changes} == {rows[0].pk, rows[1].pk, stale.pk}
    assert list(Observation.objects.order_by("pk").values()) == before
    assert not ObservationRevision.objects.exists()
    assert last_pass() is None  # a dry run is not the scheduled pass


def test_undo_restores_and_the_pass_never_redoes_an_undone_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sess = session()
    old, richer, newest = _duplicates(sess)
    stale = obs(sess, "Stale", days_ago=100)
    consolidation_run()
    fold = ObservationRevision.objects.get(observation=old)
    demotion = ObservationRevision.objects.get(observation=stale)
    revision_undo(fold.pk, actor="user")
    revision_undo(demotion.pk, actor="user")
    assert fresh(old).status == CURRENT and fresh(old).superseded_by_id is None
    assert fresh(stale).demoted is False
    again = consolidation_run()
    assert again.changes == [] and again.skipped >= 2
    assert fresh(old).status == CURRENT and fresh(stale).demoted is False
    # A different change to the same row is still made: fold into a newer repeat.
    newer_repeat = _duplicates(sess, days=(0.5,))[0]
    consolidation_run()
    assert fresh(old).superseded_by_id == newer_repeat.pk


def test_a_row_a_person_took_over_between_plan_and_apply_is_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sess = session()
    old, _richer, newest = _duplicates(sess)
    from memory.curation.consolidation import run as run_module

    real = run_module.observation_mark

    def person_first(obs_id, **kwargs):  # type: ignore[no-untyped-def]
        if obs_id == old.pk:  # a person pins it just before the pass gets to it
            observation_mark(obs_id, action="pin", actor="user")
        return real(obs_id, **kwargs)

    monkeypatch.setattr(run_module, "observation_mark", person_first)
    report = consolidation_run()
    assert report.applied == 1 and report.skipped == 1
    assert fresh(old).status == CURRENT and fresh(old).pinned


# -- bounds, off, command, schedule ---------------------------------------------------------------
def _bulk(sess, count: int) -> None:
    now = timezone.now()
    Observation.objects.bulk_create(
        Observation(
            session=sess, project=sess.project, title=f"distinct row {n} word{n}x",
            narrative=f"unique narrative {n}", files_modified=[f"f{n % 7}.py"],
            type="decision" if n % 5 == 0 else "discovery", created=now - timedelta(minutes=n),
        )
        for n in range(count)
    )  # fmt: skip


def test_queries_do_not_grow_with_the_rows_and_the_window_bounds_what_is_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sess = session()
    _bulk(sess, 30)
    with CaptureQueriesContext(connection) as small:
        consolidation_run(dry_run=True)
    _bulk(session(), 300)
    with CaptureQueriesContext(connection) as large:
        consolidation_run(dry_run=True)
    assert len(large.captured_queries) == len(small.captured_queries)
    monkeypatch.setattr(candidates, "WINDOW", 10)
    assert len(candidates.window(project="shop", owner_id=None).rows) == 10


def test_off_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_CONSOLIDATE", "off")
    sess = session()
    _duplicates(sess)
    report = consolidation_run()
    assert report.mode == "off" and report.changes == [] and "off" in report.summary()
    assert consolidation_when_due() == ""


def test_the_command_prints_the_dry_run_and_changes_nothing() -> None:
    sess = session()
    old, richer, newest = _duplicates(sess)
    out = io.StringIO()
    call_command("consolidate", "--dry-run", "--project", "shop", "--mode", "rules", stdout=out)
    text = out.getvalue()
    assert "Dry run (rules): 2 change(s) would be made; nothing was changed." in text
    assert f"would supersede #{old.pk}" in text and f"duplicate of #{newest.pk}" in text
    assert Observation.objects.filter(status=CURRENT).count() == 3
    out = io.StringIO()
    call_command("consolidate", stdout=out)
    assert "2 change(s) made" in out.getvalue()


def test_the_command_refuses_the_model_without_a_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.core.management.base import CommandError

    monkeypatch.setenv("CLAUDE_MEM_PROVIDER", "offline")
    with pytest.raises(CommandError, match="model mode needs the observer's model provider"):
        call_command("consolidate", "--mode", "model", stdout=io.StringIO())


def test_the_background_task_runs_when_due_and_not_again_before_the_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_CONSOLIDATE_EVERY_HOURS", "24")
    sess = session()
    _duplicates(sess)
    summary = consolidation_when_due()
    assert "2 change(s) made" in summary and last_pass() is not None
    _duplicates(sess, days=(0.2, 0.1))
    assert consolidation_when_due() == ""  # not due yet
    from memory.curation import tasks

    monkeypatch.setattr(tasks, "pass_due", lambda: True)
    assert "change(s) made" in consolidation_when_due()
