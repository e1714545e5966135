from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path

import pytest
import time_machine
from django.core.management import call_command

from memory.compression.llm import Usage
from memory.ledger import ledger_record_observer, ledger_report
from memory.models import LedgerEntry, Prompt, Session
from tests.briefing.gate_helpers import (
    SID,
    make_obs,
    make_project,
    post_context,
    post_gate,
    reason,
    sha,
    write_file,
)
from tests.factories import SessionFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def gated_file(root: Path, size: int = 8000) -> Path:
    target = write_file(root, "src/big.py", size=size)
    make_obs(
        SessionFactory(root=root, session_id="past"),
        "Big file notes",
        "src/big.py",
        created=datetime(2026, 1, 1, tzinfo=UTC),
        content_hash=sha(target),
    )
    return target


def test_a_refusal_saves_the_file_minus_the_timeline(client, root) -> None:
    target = gated_file(root)
    shown = (len(reason(post_gate(client, root, target))) + 3) // 4
    total = ledger_report().total
    assert (total.avoided, total.shown, total.net, total.denials) == (2000, shown, 2000 - shown, 1)


def test_a_retried_refusal_is_pure_overhead(client, root) -> None:
    target = gated_file(root)
    shown = (len(reason(post_gate(client, root, target))) + 3) // 4
    post_gate(client, root, target)  # the retry passes
    total = ledger_report().total
    assert (total.avoided, total.net, total.retries) == (0, -shown, 1)
    assert list(LedgerEntry.objects.order_by("pk").values_list("kind", "tokens_avoided")) == [
        ("gate_deny", 2000),
        ("gate_retry", -2000),
    ]


def test_observer_spend_is_subtracted(client, root) -> None:
    target = gated_file(root)
    post_gate(client, root, target)
    session = Session.objects.get(session_id=SID)
    spent = Usage(
        input=300,
        output=100,
        cache_read=80,
        cache_write=20,
        cost_usd=0.0012,
        provider="openrouter",
        model="m/x",
    )
    ledger_record_observer(session=session, project="proj", usage=spent)
    ledger_record_observer(session=session, project="proj", usage=Usage())  # nothing booked
    report = ledger_report()
    assert report.total.spent == 500
    assert report.total.net == report.total.avoided - report.total.shown - 500
    row = LedgerEntry.objects.get(kind=LedgerEntry.Kind.OBSERVER)
    assert (row.provider, row.model, row.input_tokens, row.cached_tokens, row.output_tokens) == (
        "openrouter",
        "m/x",
        300,
        100,
        100,
    )
    assert row.cost_usd == pytest.approx(0.0012)
    [usage] = report.as_dict()["observer"]
    assert usage == {
        "provider": "openrouter",
        "model": "m/x",
        "batches": 1,
        "input": 300,
        "cached": 100,
        "output": 100,
        "cost_usd": 0.0012,
    }


def test_savings_per_session_project_and_local_day(client, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_TIME_ZONE", "America/Los_Angeles")
    one, two = make_project(tmp_path, "one"), make_project(tmp_path, "two")
    target = gated_file(one)
    with time_machine.travel(
        datetime(2026, 4, 8, 3, 0, tzinfo=UTC), tick=False
    ):  # Apr 7, 8pm in LA
        post_gate(client, one, target, session_id="a")
        post_context(client, two, session_id="b")
    with time_machine.travel(datetime(2026, 4, 8, 18, 0, tzinfo=UTC), tick=False):
        post_gate(client, one, target, session_id="c")
        report = ledger_report()
        body = client.get("/api/ledger").json()
    assert [line.key for line in report.by_day] == ["2026-04-07", "2026-04-08"]
    assert {line.key: line.denials for line in report.by_project} == {"one": 2, "two": 0}
    assert {line.label.split()[0] for line in report.by_session} == {"one", "two"}
    # Sessions with a prompt are named by it; the others keep their short id.
    Prompt.objects.create(
        session=Session.objects.get(session_id="a"), number=1, text="Fix   the\nlogin bug"
    )
    labels = {line.label for line in ledger_report(days=3650).by_session}
    assert "one · Fix the login bug" in labels and any(
        label.startswith("one c") for label in labels
    )
    assert body["total"]["net"] == report.total.net and [d["key"] for d in body["by_day"]] == [
        "2026-04-07",
        "2026-04-08",
    ]
    assert report.by_session[0].net >= report.by_session[-1].net
    monkeypatch.setenv("CLAUDE_MEM_TIME_ZONE", "UTC")
    with time_machine.travel(datetime(2026, 4, 8, 18, 0, tzinfo=UTC), tick=False):
        assert [line.key for line in ledger_report().by_day] == ["2026-04-08"]


def test_the_endpoint_filters_by_project_and_window(client, root) -> None:
    target = gated_file(root)
    with time_machine.travel(datetime.now(UTC) - timedelta(days=40)):
        post_gate(client, root, target, session_id="old")
    post_gate(client, root, target, session_id="new")
    assert client.get("/api/ledger", {"days": 30}).json()["total"]["denials"] == 1
    assert client.get("/api/ledger", {"days": 60}).json()["total"]["denials"] == 2
    assert client.get("/api/ledger", {"project": "nope"}).json()["total"]["denials"] == 0
    assert client.get("/api/ledger", {"days": 0}).status_code in {400, 422}


def test_cmem_stats_prints_net_savings(client, root) -> None:
    target = gated_file(root)
    post_gate(client, root, target)
    out = StringIO()
    call_command("stats", stdout=out)
    text = out.getvalue()
    total = ledger_report().total
    net = total.net
    assert text.startswith("cmem ledger, all projects, last 30 days: net ")
    # One net, in money: no token net beside it that could disagree in sign.
    assert "token ledger: net" not in text
    assert f"tokens: saved {total.avoided:,}, added {total.shown:,}" in text
    assert "per day" in text and "per project" in text and "per session" in text
    assert "proj" in text
    out = StringIO()
    call_command("stats", "--json", "--project", "proj", stdout=out)
    assert json.loads(out.getvalue())["total"]["net"] == net


def test_cmem_stats_shows_observer_usage_per_provider_and_model() -> None:
    for provider, model, cost in [
        ("claude", "claude-haiku-4-5-20251001", 0.0007),
        ("claude", "claude-haiku-4-5-20251001", 0.0003),
        ("openai-compatible", "qwen2.5-coder:7b", 0.0),
    ]:
        ledger_record_observer(
            session=None,
            project="proj",
            usage=Usage(
                input=10, output=5, cache_read=100, cost_usd=cost, provider=provider, model=model
            ),
        )
    out = StringIO()
    call_command("stats", stdout=out)
    text = out.getvalue()
    assert "observer usage (provider, model: batches, input / cached / output tokens, cost)" in text
    assert "  claude, claude-haiku-4-5-20251001: 2 batches, 20 / 200 / 10 tokens, $0.0010" in text
    assert "  openai-compatible, qwen2.5-coder:7b: 1 batches, 10 / 100 / 5 tokens, $0.0000" in text
