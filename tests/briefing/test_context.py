from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import time_machine

from memory.briefing.context import MAX_CHARS, utf16_len
from memory.models import ContextCache, FileView, LedgerEntry, Session
from tests.briefing.gate_helpers import (
    SID,
    make_obs,
    make_project,
    make_summary,
    post_context,
)
from tests.factories import SessionFactory

pytestmark = pytest.mark.django_db

GOLDEN = Path(__file__).parent / "golden"
NOW = datetime(2026, 8, 19, 22, 25, tzinfo=UTC)  # 3:25pm PDT


@pytest.fixture(autouse=True)
def la(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_TIME_ZONE", "America/Los_Angeles")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path, "my-app")


def pdt(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 8, day, hour, minute, tzinfo=UTC) + timedelta(hours=7)


def context(client, root: Path, source: str = "startup", session_id: str = SID) -> str:
    out = post_context(client, root, source=source, session_id=session_id)
    return out["hookSpecificOutput"]["additionalContext"] if out else ""


def golden(name: str, text: str, **ids: int) -> None:
    """Compare with tests/briefing/golden/<name>; ids are placeholders ({o1}, {s1}) in the file.
    CMEM_UPDATE_GOLDEN=1 rewrites the file from the current output."""
    path = GOLDEN / name
    if os.environ.get("CMEM_UPDATE_GOLDEN"):
        body = text
        for key, value in sorted(ids.items(), key=lambda kv: -len(str(kv[1]))):
            if key.startswith("s"):
                body = body.replace(f"\nS{value} ", f"\nS{{{key}}} ").replace(
                    f"(S{value}, ", f"(S{{{key}}}, "
                )
            else:
                body = body.replace(f"\n{value} ", f"\n{{{key}}} ")
        path.write_text(body)
    expected = path.read_text()
    for key, value in ids.items():
        expected = expected.replace(f"{{{key}}}", str(value))
    # The stated cost moves with the ids' digits (other databases number rows differently).
    assert re.sub(r"This index: ~[\d,]+t", "This index: ~Nt", text) == re.sub(
        r"This index: ~[\d,]+t", "This index: ~Nt", expected
    )


def seed_history(root: Path) -> dict[str, int]:
    s1 = SessionFactory(root=root, session_id="s1")
    s2 = SessionFactory(root=root, session_id="s2")
    o1 = make_obs(
        s1,
        "Webhook sender uses fixed 5s timeout",
        "src/webhooks/sender.py",
        created=pdt(18, 10, 5),
        narrative="n" * 300,
    )
    o2 = make_obs(
        s1,
        "Fixed retry storm on 429 responses",
        "src/webhooks/sender.py",
        created=pdt(18, 10, 5),
        role="modified",
        type="bugfix",
    )
    o3 = make_obs(
        s1,
        "Exponential backoff for webhook sender",
        "src/webhooks/backoff.py",
        created=pdt(18, 10, 20),
        role="modified",
        type="feature",
    )
    o4 = make_obs(
        s1,
        "Sender retries share the pool",
        "src/webhooks/sender.py",
        created=pdt(18, 10, 40),
        type="decision",
    )
    sum1 = make_summary(
        s1, "Add retry to webhook sender", created=pdt(18, 11, 0), completed="Backoff in place"
    )
    o5 = make_obs(
        s2,
        "Release checklist lives in docs",
        "docs/release.md",
        created=pdt(19, 9, 0),
        type="discovery",
    )
    o6 = make_obs(
        s2,
        "Bumped version to 2.4",
        "pyproject.toml",
        created=pdt(19, 9, 30),
        role="modified",
        type="change",
    )
    sum2 = make_summary(
        s2,
        "Cut the 2.4 release",
        created=pdt(19, 10, 0),
        investigated="The release checklist and\nthe changelog",
        learned="Tags must be signed",
        completed="Version bumped",
        next_steps="Publish the wheel",
    )
    return {
        "o1": o1.pk,
        "o2": o2.pk,
        "o3": o3.pk,
        "o4": o4.pk,
        "o5": o5.pk,
        "o6": o6.pk,
        "s1": sum1.pk,
        "s2": sum2.pk,
    }


@time_machine.travel(NOW, tick=False)
def test_the_index_matches_its_golden_file(client, root) -> None:
    ids = seed_history(root)
    golden("context_basic.txt", context(client, root), **ids)


@pytest.mark.parametrize("language", ["", "zh"])
@time_machine.travel(NOW, tick=False)
def test_an_empty_project_gets_a_short_welcome(client, root, monkeypatch, language) -> None:
    if language:  # the welcome, like the index, is for the agent: English whatever the setting
        monkeypatch.setenv("CLAUDE_MEM_LANGUAGE", language)
    golden("context_welcome.txt", context(client, root))


def test_the_header_carries_project_local_date_time_and_zone(client, root, monkeypatch) -> None:
    seed_history(root)
    for zone, instant, header in [
        ("America/Los_Angeles", NOW, "# [my-app] recent context, 2026-08-19 3:25pm PDT"),
        (
            "America/Los_Angeles",
            datetime(2026, 12, 1, 8, 0, tzinfo=UTC),
            "# [my-app] recent context, 2026-12-01 12:00am PST",
        ),
        ("Europe/London", NOW, "# [my-app] recent context, 2026-08-19 11:25pm BST"),
        ("Australia/Sydney", NOW, "# [my-app] recent context, 2026-08-20 8:25am AEST"),
    ]:
        monkeypatch.setenv("CLAUDE_MEM_TIME_ZONE", zone)
        with time_machine.travel(instant, tick=False):
            assert context(client, root).splitlines()[0] == header


def test_day_groups_follow_the_zone(client, root, monkeypatch) -> None:
    session = SessionFactory(root=root, session_id="s")
    make_obs(
        session, "Late evening in LA", "a.py", created=datetime(2026, 8, 19, 5, 30, tzinfo=UTC)
    )  # Aug 18 10:30pm PDT
    text = context(client, root)
    assert "### Aug 18, 2026" in text and "10:30p" in text
    monkeypatch.setenv("CLAUDE_MEM_TIME_ZONE", "Asia/Tokyo")
    text = context(client, root, session_id="other")
    assert "### Aug 19, 2026" in text and "2:30p" in text


def test_resume_without_anything_new_injects_nothing(client, root) -> None:
    seed_history(root)
    with time_machine.travel(NOW, tick=False):
        assert context(client, root) != ""  # the conversation's index
    with time_machine.travel(NOW + timedelta(hours=1), tick=False):
        assert post_context(client, root, source="resume") == {}
    assert list(LedgerEntry.objects.values_list("detail", flat=True)) == ["session_start:startup"]


def test_resume_gets_only_what_other_sessions_added_since_its_index(client, root) -> None:
    ids = seed_history(root)
    mine = Session.objects.get(session_id="s1")
    with time_machine.travel(NOW, tick=False):
        index = context(client, root, session_id="s1")
    view = FileView.objects.create(session=mine, path=str(root / "a.py"))
    other = SessionFactory(root=root, session_id="meanwhile")
    new = make_obs(
        other,
        "Refund totals now round half-even",
        "src/refunds.py",
        created=NOW + timedelta(minutes=30),
    )
    own = make_obs(
        mine, "Own row of the resumed session", "src/a.py", created=NOW + timedelta(minutes=31)
    )
    with time_machine.travel(NOW + timedelta(hours=1), tick=False):
        text = context(client, root, source="resume", session_id="s1")
        again = post_context(client, root, source="resume", session_id="s1")
    assert text.startswith("Recorded notes of earlier sessions")
    assert "new since this conversation's index (2026-08-19 3:25pm PDT)" in text
    assert f"{new.pk} 3:55p" in text and "Refund totals now round half-even" in text
    # Not the index again, not the resumed session's own work, and file views kept.
    assert f"\n{ids['o1']} " not in text and "Own row" not in text and own.pk
    assert "Webhook sender" in index and "Webhook sender" not in text
    assert FileView.objects.filter(pk=view.pk).exists()
    # Booked, so a second resume with nothing newer injects nothing.
    assert again == {}
    assert LedgerEntry.objects.filter(detail="session_start:resume").count() == 1


def test_resume_is_bounded(client, root) -> None:
    mine = SessionFactory(root=root, session_id="s1")
    with time_machine.travel(NOW, tick=False):
        context(client, root, session_id="s1")
    other = SessionFactory(root=root, session_id="busy")
    for n in range(30):
        make_obs(other, f"busy row {n}", "src/b.py", created=NOW + timedelta(minutes=n + 1))
    with time_machine.travel(NOW + timedelta(hours=1), tick=False):
        text = context(client, root, source="resume", session_id="s1")
    assert "busy row 29" in text and "busy row 10" in text and "busy row 9\n" not in text
    assert "busy row 9 " not in text and "left out" in text and mine.pk


def test_codex_resume_still_gets_nothing(client, root) -> None:
    seed_history(root)
    out = client.post(
        "/api/hooks/codex/context",
        data={
            "session_id": SID,
            "cwd": str(root),
            "hook_event_name": "SessionStart",
            "source": "resume",
        },
        content_type="application/json",
    )
    assert out.status_code == 200 and "additionalContext" not in out.content.decode()


def test_excluded_projects_get_nothing(client, root, monkeypatch) -> None:
    seed_history(root)
    monkeypatch.setenv("CLAUDE_MEM_EXCLUDED_PROJECTS", "my-*")
    assert post_context(client, root) == {}
    assert not LedgerEntry.objects.exists()


@pytest.mark.parametrize("source", ["clear", "compact"])
def test_clear_and_compact_forget_the_sessions_file_views(client, root, source) -> None:
    mine = SessionFactory(root=root, session_id=SID)
    other = SessionFactory(root=root, session_id="other")
    FileView.objects.create(session=mine, path=str(root / "a.py"))
    FileView.objects.create(session=other, path=str(root / "a.py"))
    context(client, root, source=source)
    assert list(FileView.objects.values_list("session__session_id", flat=True)) == ["other"]


def test_compact_before_any_prompt_creates_the_session(client, root) -> None:
    context(client, root, source="compact")
    session = Session.objects.get(session_id=SID)
    assert session.project == "my-app" and session.project_root == str(root)


def test_observation_and_session_bounds(client, root, monkeypatch) -> None:
    session = SessionFactory(root=root, session_id="s")
    made = [
        make_obs(session, f"Row {i}", f"f{i}.py", created=pdt(10, 8) + timedelta(minutes=i)).pk
        for i in range(60)
    ]
    summaries = [
        make_summary(session, f"Request {i}", created=pdt(11, 8) + timedelta(minutes=i)).pk
        for i in range(12)
    ]
    text = context(client, root)
    shown = {int(line.split()[0]) for line in text.splitlines() if line[:1].isdigit()}
    assert shown == set(made[-50:])
    assert [bool(re.search(rf"^S{pk} ", text, re.M)) for pk in summaries] == [False] * 2 + [
        True
    ] * 10
    monkeypatch.setenv("CLAUDE_MEM_CONTEXT_OBSERVATIONS", "5")
    monkeypatch.setenv("CLAUDE_MEM_CONTEXT_SESSION_COUNT", "2")
    text = context(client, root, session_id="x")
    assert {int(line.split()[0]) for line in text.splitlines() if line[:1].isdigit()} == set(
        made[-5:]
    )
    assert sum(line.startswith("S") for line in text.splitlines()) == 2


def test_never_over_ten_thousand_characters_and_only_whole_rows(client, root, monkeypatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_CONTEXT_OBSERVATIONS", "200")
    monkeypatch.setenv("CLAUDE_MEM_CONTEXT_TOKENS", "0")  # no token budget: only the hard cap
    session = SessionFactory(root=root, session_id="s")
    # Astral characters count twice in Claude Code's (UTF-16) measure.
    made = [
        make_obs(
            session,
            f"Row {i} 🎉 " + "word " * 20,
            f"dir/f{i}.py",
            created=pdt(10, 8) + timedelta(minutes=i),
        ).pk
        for i in range(200)
    ]
    text = context(client, root)
    assert 9_000 < utf16_len(text) <= MAX_CHARS
    rows = [line for line in text.splitlines() if line[:1].isdigit()]
    assert all(
        line.rstrip().endswith("~" + line.rsplit("~", 1)[-1]) and "word word" in line
        for line in rows
    )
    shown = [int(line.split()[0]) for line in rows]
    assert shown == made[-len(shown) :]  # the newest rows are the ones kept


def test_the_token_budget_bounds_the_index(client, root, monkeypatch) -> None:
    session = SessionFactory(root=root, session_id="s")
    for i in range(50):
        make_obs(
            session,
            f"Row {i} " + "word " * 10,
            f"f{i}.py",
            created=pdt(10, 8) + timedelta(minutes=i),
        )
    monkeypatch.setenv("CLAUDE_MEM_CONTEXT_TOKENS", "400")
    text = context(client, root)
    assert (len(text) + 3) // 4 <= 400 + 20  # + the header, rendered outside the cached body
    assert sum(line[:1].isdigit() for line in text.splitlines()) >= 5


def test_the_index_states_its_own_token_cost(client, root) -> None:
    seed_history(root)
    text = context(client, root)
    stated = int(text.split("This index: ~", 1)[1].split("t.", 1)[0].replace(",", ""))
    assert abs(stated - (len(text) + 3) // 4) <= 3


def test_icons_are_never_astral(client, root) -> None:
    session = SessionFactory(root=root, session_id="s")
    for i, kind in enumerate(
        [
            "bugfix",
            "feature",
            "refactor",
            "change",
            "discovery",
            "decision",
            "security_alert",
            "security_note",
            "sensitive",
            "odd",
        ]
    ):
        make_obs(session, f"T{i}", "a.py", created=pdt(10, 8, i), type=kind)
    text = context(client, root)
    assert all(ord(ch) <= 0xFFFF for ch in text)


def test_a_repeated_start_is_served_from_the_cache_with_a_fresh_header(
    client, root, django_assert_max_num_queries
) -> None:
    seed_history(root)
    with time_machine.travel(NOW, tick=False):
        first = context(client, root)
    # Mark the cached body: a re-render would lose the mark.
    ContextCache.objects.update(text=ContextCache.objects.get().text + "\nCACHED")
    with time_machine.travel(NOW + timedelta(hours=2), tick=False):
        second = context(client, root, session_id="second")
    assert second.splitlines()[0] == "# [my-app] recent context, 2026-08-19 5:25pm PDT"
    assert second.endswith("\nCACHED") and second.splitlines()[1:-1] == first.splitlines()[1:]


def test_explicit_invalidation_rerenders(client, root) -> None:
    seed_history(root)
    context(client, root)
    ContextCache.objects.update(text="STALE")
    ContextCache.invalidate(project="my-app")
    assert "STALE" not in context(client, root, session_id="again")


def test_a_new_observation_rerenders_even_without_an_invalidation(client, root) -> None:
    seed_history(root)
    context(client, root)
    make_obs(
        SessionFactory(root=root, session_id="s3"),
        "A brand new finding",
        "new.py",
        created=pdt(19, 12),
    )
    assert "A brand new finding" in context(client, root, session_id="again")


def test_a_settings_change_rerenders(client, root, monkeypatch) -> None:
    seed_history(root)
    assert "Fixed retry storm" in context(client, root)
    monkeypatch.setenv("CLAUDE_MEM_CONTEXT_OBSERVATIONS", "2")
    assert "Fixed retry storm" not in context(client, root, session_id="again")


def test_compact_rerenders(client, root) -> None:
    seed_history(root)
    context(client, root)
    ContextCache.objects.update(text="STALE")
    assert "STALE" not in context(client, root, source="compact")


def test_every_injection_is_booked_in_the_ledger(client, root) -> None:
    seed_history(root)
    text = context(client, root)
    entry = LedgerEntry.objects.get()
    assert entry.kind == LedgerEntry.Kind.INJECTION and entry.project == "my-app"
    assert entry.tokens_shown == (len(text) + 3) // 4
    assert entry.session == Session.objects.get(session_id=SID)


def test_the_preview_endpoint_shows_what_would_be_injected(client, root) -> None:
    seed_history(root)
    with time_machine.travel(NOW, tick=False):
        injected = context(client, root)
        body = client.get("/api/context", {"project": "my-app"}).json()
    assert (
        body["text"] == injected and body["chars"] == len(injected) and body["project"] == "my-app"
    )
    assert client.get("/api/context", {"project": " "}).status_code == 400


def test_an_unhealthy_observer_is_announced_first(client, root) -> None:
    from memory.compression.health import observer_record_failure

    seed_history(root)
    for _ in range(3):
        observer_record_failure(error="HTTP 401 from the API")
    lines = context(client, root).splitlines()
    assert lines[0].startswith("⚠ cmem memory is degraded") and "HTTP 401" in lines[0]
    assert lines[1].startswith("# [my-app] recent context, ")


def test_zero_counts_turn_injection_off_but_still_reset_views(client, root, monkeypatch) -> None:
    seed_history(root)
    FileView.objects.create(
        session=SessionFactory(root=root, session_id=SID), path=str(root / "a.py")
    )
    monkeypatch.setenv("CLAUDE_MEM_CONTEXT_OBSERVATIONS", "0")
    monkeypatch.setenv("CLAUDE_MEM_CONTEXT_SESSION_COUNT", "0")
    assert post_context(client, root, source="compact") == {}
    assert not FileView.objects.exists() and not LedgerEntry.objects.exists()
    monkeypatch.setenv("CLAUDE_MEM_CONTEXT_SESSION_COUNT", "1")
    text = context(client, root)
    assert "Cut the 2.4 release" in text and "Fixed retry storm" not in text


@time_machine.travel(NOW, tick=False)
def test_the_index_stays_english_in_the_users_language(client, root, monkeypatch) -> None:
    # CLAUDE_MEM_LANGUAGE changes what the observer writes, never what cmem tells the agent.
    monkeypatch.setenv("CLAUDE_MEM_LANGUAGE", "zh")
    ids = seed_history(root)
    golden("context_basic.txt", context(client, root), **ids)
