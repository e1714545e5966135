"""Savings a user can believe (issue 20): the ledger in money, each kind at its model's
price; the session's model read from its Claude Code transcript; what each refusal led to;
and the session page's gate decisions and injections, all through the real hook endpoints
and pages (Django's test client, real SQLite)."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from memory.briefing.gate_policy import adaptive_mode
from memory.capture.transcript_model import transcript_model
from memory.compression.llm import Usage
from memory.ledger import ledger_record_observer, ledger_report, memory_tool_bare
from memory.ledger.prices import input_usd, price_row
from memory.models import LedgerEntry, Session
from tests.briefing.gate_helpers import (
    SID,
    fixture,
    make_obs,
    make_project,
    post_context,
    post_gate,
    post_hook,
    sha,
    write_file,
)
from tests.factories import SessionFactory
from tests.support import CLAUDE_FIXTURES

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_project(tmp_path)


def known(root: Path, rel: str, size: int = 8000) -> Path:
    path = write_file(root, rel, size=size)
    make_obs(
        SessionFactory(root=root, session_id=f"past-{rel}"),
        f"Notes on {rel}",
        rel,
        created=datetime(2026, 1, 1, tzinfo=UTC),
        content_hash=sha(path),
    )
    return path


def tool_use(client, root: Path, tool: str, tool_input: dict, response, n: int) -> None:
    payload = fixture("PostToolUse.json")
    payload.update(
        cwd=str(root),
        session_id=SID,
        tool_name=tool,
        tool_input=tool_input,
        tool_response=response,
        tool_use_id=f"toolu_money_{n}",
    )
    post_hook(client, "observation", payload)


def transcript(tmp_path: Path, model: str = "claude-sonnet-5-5") -> Path:
    """The recorded 2.1.332 transcript with its assistant messages on `model`."""
    text = (CLAUDE_FIXTURES / "transcript.basic.jsonl").read_text()
    path = tmp_path / "session.jsonl"
    path.write_text(text.replace('"model":"claude-opus-5-5"', f'"model":"{model}"'))
    return path


def test_the_price_table_knows_the_main_models_by_longest_prefix() -> None:
    assert price_row("claude-opus-5-5")[0] == 4.0  # not claude-opus-5's $5
    assert price_row("claude-opus-5")[0] == 5.0
    assert price_row("claude-opus-5-5[1m]") == price_row("claude-opus-5-5")
    assert price_row("anthropic/claude-sonnet-5-5")[0] == 2.0
    assert price_row("some-local-model") is None
    assert input_usd("claude-opus-5-5", 1_000_000) == 4.0
    assert input_usd("some-local-model", 1_000_000) == 0.0


def test_the_transcript_names_the_sessions_model(tmp_path: Path) -> None:
    assert transcript_model(str(CLAUDE_FIXTURES / "transcript.basic.jsonl")) == "claude-opus-5-5"
    path = transcript(tmp_path)
    assert transcript_model(str(path)) == "claude-sonnet-5-5"
    link = tmp_path / "link.jsonl"
    os.symlink(path, link)
    assert transcript_model(str(link)) == ""  # links are never followed
    assert transcript_model(str(tmp_path / "missing.jsonl")) == ""
    assert transcript_model(str(tmp_path)) == ""
    other = tmp_path / "notes.txt"
    shutil.copyfile(path, other)
    assert transcript_model(str(other)) == ""  # only a .jsonl transcript is read


def test_stop_records_the_model_and_money_follows_it(client, root, tmp_path) -> None:
    target = known(root, "src/big.py", size=40_000)  # 10,000 tokens spared
    post_gate(client, root, target)
    stop = fixture("Stop.json")
    stop.update(cwd=str(root), session_id=SID, transcript_path=str(transcript(tmp_path)))
    post_hook(client, "summarize", stop)
    assert Session.objects.get(session_id=SID).model == "claude-sonnet-5-5"
    total = ledger_report().total
    assert total.avoided == 10_000
    assert total.usd_avoided == pytest.approx(10_000 * 2.0 / 1e6)  # Sonnet 5.5's input price
    assert total.usd_shown == pytest.approx(total.shown * 2.0 / 1e6)


def test_unknown_sessions_use_the_documented_default(client, root, monkeypatch) -> None:
    target = known(root, "src/big.py", size=40_000)
    post_gate(client, root, target)
    report = ledger_report()
    assert report.default_model == "claude-opus-5-5"
    assert report.total.usd_avoided == pytest.approx(10_000 * 4.0 / 1e6)
    monkeypatch.setenv("CLAUDE_MEM_SESSION_MODEL", "claude-haiku-5-5")
    assert ledger_report().total.usd_avoided == pytest.approx(10_000 * 0.10 / 1e6)


def test_observer_tokens_weigh_what_they_cost(client, root) -> None:
    target = known(root, "src/big.py", size=40_000)
    post_gate(client, root, target)
    session = Session.objects.get(session_id=SID)
    # 20,000 observer tokens: more than the 10,000 spared in tokens, yet cheaper in money.
    ledger_record_observer(
        session=session,
        project="proj",
        usage=Usage(input=18_000, output=2_000, cost_usd=0.004, provider="anthropic", model="h"),
    )
    total = ledger_report().total
    assert total.net < 0 < total.usd_net
    assert total.usd_spent == pytest.approx(0.004)


def test_stats_tiles_show_money_with_one_line_each_and_the_net_with_its_parts(
    client, root, monkeypatch, tmp_path
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    target = known(root, "src/big.py", size=40_000)
    post_gate(client, root, target)
    page = client.get("/stats/").content.decode()
    assert 'id="money-tiles"' in page
    for tile in ("tile-saved", "tile-added", "tile-observer", "tile-net"):
        assert f'id="{tile}"' in page
    assert "$0.040" in page  # 10,000 tokens spared at Opus 5.5's $4 per million
    assert "at claude-opus-5-5&#x27;s input price" in page
    assert 'id="net-parts">Saved $0.040 − added $' in page and " − observer $0.0000" in page
    # Saved more than it added: the net reads as a saving, with a plus sign, in green.
    assert 'class="net-saved"' in page and "+$0.0" in page and " saved</dd>" in page
    # No API key: the money is what the same use would cost on the API.
    assert "Net, API-equivalent" in page
    assert "A subscription pays a flat fee, not these amounts." in page
    assert "CLAUDE_MEM_" not in page.split('id="billing-line"')[1].split("</p>")[0]
    monkeypatch.setenv("CLAUDE_MEM_BILLING", "api")
    page = client.get("/stats/").content.decode()
    assert "Net, at API prices" in page and "billing is set to api in Settings" in page


def test_cmem_stats_shows_the_same_money(client, root) -> None:
    target = known(root, "src/big.py", size=40_000)
    post_gate(client, root, target)
    out = StringIO()
    call_command("stats", stdout=out)
    text = out.getvalue()
    assert "Saved by the read gate: $0.040, 10,000 tokens." in text
    assert "saved $0.040 − added $" in text and " − observer $0.0000 = +$0.0" in text
    assert "net +$0.0" in text and " saved (" in text
    out = StringIO()
    call_command("stats", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data["total"]["usd_avoided"] == pytest.approx(0.04)
    assert data["default_model"] == "claude-opus-5-5" and "billing" in data


def test_memory_tool_names_are_recognised_per_route() -> None:
    assert memory_tool_bare("mcp__cmem__smart_outline") == "smart_outline"
    assert memory_tool_bare("mcp__plugin_cmem_cmem__get_observations") == "get_observations"
    assert memory_tool_bare("smart_unfold") == "smart_unfold"
    assert memory_tool_bare("mcp__other__smart_outline") == ""
    assert memory_tool_bare("mcp__cmem__search") == ""
    assert memory_tool_bare("Read") == ""


def test_each_refusal_learns_what_it_led_to(client, root) -> None:
    outlined, fetched, reread, left = (
        known(root, f"src/{name}.py") for name in ("outlined", "fetched", "reread", "left")
    )
    post_gate(client, root, left)  # answered by nothing: the timeline was enough
    post_gate(client, root, outlined)
    outline = [{"type": "text", "text": "class Outlined:\n  def run(self) ...\n" * 10}]
    tool_use(client, root, "mcp__cmem__smart_outline", {"file_path": str(outlined)}, outline, 1)
    post_gate(client, root, fetched)
    tool_use(client, root, "mcp__cmem__get_observations", {"ids": [1]}, "#1 notes " * 40, 2)
    post_gate(client, root, reread)
    post_gate(client, root, reread)  # read again: passes
    outcomes = dict(
        LedgerEntry.objects.filter(kind=LedgerEntry.Kind.GATE_DENY).values_list("path", "outcome")
    )
    assert outcomes == {
        str(outlined): "smart_outline",
        str(fetched): "get_observations",
        str(reread): "read_again",
        str(left): "",
    }
    answers = LedgerEntry.objects.filter(kind=LedgerEntry.Kind.MEMORY_TOOL).order_by("pk")
    assert [(a.detail, a.tokens_shown > 50) for a in answers] == [
        ("smart_outline", True),
        ("get_observations", True),
    ]
    mode = adaptive_mode(project="proj")
    assert "1 of the last 4 refusals were read again" in mode.why
    assert "2 answered with a memory tool (get_observations 1, smart_outline 1)" in mode.why
    assert "1 with nothing more" in mode.why
    # What the memory tools answered is shown tokens: the ledger counts it against the savings.
    assert ledger_report().total.memory_tools == 2


def test_the_session_page_lists_every_gate_decision_and_injection(client, root) -> None:
    post_context(client, root)
    first, second, changed = (known(root, f"src/{n}.py") for n in ("first", "second", "changed"))
    post_gate(client, root, first)  # refused
    post_gate(client, root, first)  # passed on retry
    tool_use(client, root, "Read", {"file_path": str(first)}, {"type": "text"}, 3)
    post_gate(client, root, first)  # re-read of an unchanged file this session holds: refused
    post_gate(client, root, second)
    tool_use(client, root, "mcp__cmem__smart_outline", {"file_path": str(second)}, "outline", 4)
    changed.write_text("new content " * 900)
    post_gate(client, root, changed)  # changed since its observation: passes with context
    prompt = fixture("UserPromptSubmit.json")
    prompt.update(cwd=str(root), session_id=SID, prompt="Tidy the handlers before release")
    post_hook(client, "session-init", prompt)
    session = Session.objects.get(session_id=SID)
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert 'id="session-ledger"' in page
    section = page[page.index('id="session-ledger"') :]
    for label in (
        "SessionStart index (startup)",
        "refused",
        "passed on retry",
        "re-read refused",
        "memory tool smart_outline",
        "passed with context",
        "smart_outline instead",
        "read again: the refusal was overhead",
    ):
        assert label in section, label
    assert "<code>src/first.py</code>" in section and "<code>src/changed.py</code>" in section
    assert "at claude-opus-5-5, the default: the transcript named no model" in section
    assert 'id="session-gate-mode">Read gate in proj: it ' in section
    # In plain words, after the work, with no red for a figure that is not an error.
    assert "cmem stopped 2 full re-reads of files it already knew" in section
    assert (
        "answered 1 memory lookup and added its notes to the agent&#x27;s context once." in section
    )
    assert "(the agent read 1 of them anyway)" in section
    assert page.index('id="session-ledger"') > page.index("Tidy the handlers before release")
    assert 'class="neg"' not in section and "refusal(s)" not in section.split("gate-why")[0]
    # Sessions stay named by their first prompt in the ledger.
    assert ledger_report().by_session[0].label == "proj · Tidy the handlers before release"


def test_a_net_cost_reads_as_a_cost_in_the_page_and_in_cmem_stats(client, root) -> None:
    """Observer spend above what the gate saved: one negative net, with the word and the
    neutral colour of a cost, the same in `cmem stats` (issue 35)."""
    target = known(root, "src/big.py", size=40_000)
    post_gate(client, root, target)
    ledger_record_observer(
        session=None,
        project="proj",
        usage=Usage(input=1_000, output=100, cost_usd=1.0, provider="", model=""),
    )
    found_net = ledger_report().total.usd_net
    assert found_net < 0
    page = client.get("/stats/").content.decode()
    assert 'class="net-cost"' in page and 'class="net-saved"' not in page
    assert " cost</dd>" in page and "−$0.9" in page
    assert "(?)" not in page and "unknown model" not in page.split('id="tile-observer"')[0]
    out = StringIO()
    call_command("stats", stdout=out)
    text = out.getvalue()
    assert "net −$0.9" in text and " cost (" in text
    assert "?, ?" not in text and "unknown provider, unknown model: 1 batches" in text


def test_an_empty_install_says_nothing_was_measured_yet(client) -> None:
    page = client.get("/stats/").content.decode()
    assert 'id="nothing-measured"' in page and "Nothing measured yet" in page
    assert 'id="money-tiles"' not in page and "$0.0000" not in page
    assert "cmem demo" in page
    out = StringIO()
    call_command("stats", stdout=out)
    assert "nothing measured yet" in out.getvalue() and "$0.0000" not in out.getvalue()
