"""The adaptive read gate (the default) and the tool names the gate and index use, through
the real hook endpoints: refusals that pay off keep it refusing, refusals the model answers
by reading again switch it to allow-with-timeline, and new evidence switches it back."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory.agents.tool_names import mcp_tool_name
from memory.briefing.gate_policy import PROBE_EVERY, adaptive_mode
from memory.models import LedgerEntry
from tests.briefing.gate_helpers import (
    added_context,
    decision,
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


def known_files(root: Path, count: int, size: int = 8000) -> list[Path]:
    """`count` files of `size` bytes, each with one unchanged past observation."""
    past = SessionFactory(root=root, session_id=f"past-{root.name}")
    files = []
    for i in range(count):
        path = write_file(root, f"src/mod{i}.py", size=size)
        make_obs(
            past,
            f"Notes on mod{i}",
            f"src/mod{i}.py",
            created=datetime(2026, 1, 1, tzinfo=UTC),
            content_hash=sha(path),
        )
        files.append(path)
    return files


def test_adaptive_is_the_default_and_refuses_while_refusals_pay_off(client, root) -> None:
    files = known_files(root, 4)
    # A model that follows the advice: each refused file is never read again.
    for path in files:
        assert decision(post_gate(client, root, path)) == "deny"
    mode = adaptive_mode(project=root.name)
    assert mode.mode == "deny" and mode.refusals == 4 and mode.read_again == 0
    assert mode.saved > 0 and mode.cost == 0
    assert "0 of the last 4 refusals were read again" in mode.why


def test_adaptive_switches_to_context_when_refusals_are_read_again(client, root) -> None:
    files = known_files(root, 5)
    # A model that reads again after each refusal: the second Read passes (a GATE_RETRY).
    for path in files[:2]:
        assert decision(post_gate(client, root, path)) == "deny"
        assert decision(post_gate(client, root, path)) == "pass"
    mode = adaptive_mode(project=root.name)
    assert mode.mode == "context" and mode.read_again == 2 and mode.cost > mode.saved
    assert mode.why.startswith("advising instead of refusing: 2 of the last 2 refusals")
    # The third file is no longer refused: the read goes ahead with the timeline.
    out = post_gate(client, root, files[2])
    assert decision(out) == "allow"
    assert "Notes on mod2" in added_context(out)
    assert "mcp__cmem__get_observations([IDs])" in added_context(out)
    assert LedgerEntry.objects.filter(kind=LedgerEntry.Kind.GATE_DENY).count() == 2


def test_adaptive_probes_in_context_mode_and_returns_to_refusing(client, root) -> None:
    files = known_files(root, 3 * PROBE_EVERY)
    for path in files[:2]:
        post_gate(client, root, path)
        post_gate(client, root, path)
    assert adaptive_mode(project=root.name).mode == "context"
    decisions = [decision(post_gate(client, root, path)) for path in files[2 : 2 + PROBE_EVERY]]
    # Advice for PROBE_EVERY - 1 reads, then one probe refusal to gather fresh evidence.
    assert decisions == ["allow"] * (PROBE_EVERY - 1) + ["deny"]
    # The model now takes the cheaper path: the probe is not read again, nor is the next
    # one, PROBE_EVERY reads later; two refusals in a row that paid off: refusing again.
    rest = files[2 + PROBE_EVERY :]
    later = [decision(post_gate(client, root, path)) for path in rest[:PROBE_EVERY]]
    assert later == ["allow"] * (PROBE_EVERY - 1) + ["deny"]
    final = adaptive_mode(project=root.name)
    assert final.mode == "deny" and final.why.startswith("refusing again: the 2 latest")
    assert decision(post_gate(client, root, rest[PROBE_EVERY])) == "deny"


@pytest.mark.parametrize("mode", ["deny", "context", "off"])
def test_the_explicit_modes_stay_available(client, root, monkeypatch, mode) -> None:
    monkeypatch.setenv("CLAUDE_MEM_READ_GATE", mode)
    files = known_files(root, 3)
    for path in files[:2]:
        post_gate(client, root, path)
        post_gate(client, root, path)
    expected = {"deny": "deny", "context": "allow", "off": "pass"}[mode]
    assert decision(post_gate(client, root, files[2])) == expected


def test_tool_names_per_agent_and_install_route() -> None:
    assert mcp_tool_name("get_observations", platform="claude-code") == (
        "mcp__cmem__get_observations"
    )
    assert (
        mcp_tool_name("smart_outline", platform="claude-code", route="install")
        == "mcp__cmem__smart_outline"
    )
    assert (
        mcp_tool_name("smart_unfold", platform="claude-code", route="plugin:cmem")
        == "mcp__plugin_cmem_cmem__smart_unfold"
    )
    assert mcp_tool_name("search", platform="codex") == "mcp__cmem__search"
    assert mcp_tool_name("search", platform="gemini") == "search"


def test_deny_text_names_the_tools_through_the_plugin(client, root, monkeypatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_INSTALL_ROUTE", "plugin:cmem")
    (path,) = known_files(root, 1)
    text = reason(post_gate(client, root, path))
    assert "mcp__plugin_cmem_cmem__get_observations([IDs])" in text
    assert f'mcp__plugin_cmem_cmem__smart_outline("{path}")' in text
    assert f'mcp__plugin_cmem_cmem__smart_unfold("{path}", "<symbol>")' in text
    assert "mcp__plugin_cmem_cmem__get_tool_uses([IDs]) -- costliest" in text


def test_the_index_names_the_tools_as_the_agent_sees_them(client, root) -> None:
    known_files(root, 1)
    text = added_context(post_context(client, root))
    assert (
        "Details: mcp__cmem__get_observations([IDs]); raw tool output (costliest): "
        "mcp__cmem__get_tool_uses([IDs]); older work: mcp__cmem__search(query), "
        "mcp__cmem__timeline(anchor=ID)." in text
    )
    empty = make_project(root.parent, "fresh")
    welcome = added_context(post_context(client, empty, session_id="s-fresh"))
    assert "Search past work any time with mcp__cmem__search(query)." in welcome


def test_stats_and_the_api_show_each_projects_mode_and_why(client, root, tmp_path) -> None:
    files = known_files(root, 2)
    for path in files:
        post_gate(client, root, path)
        post_gate(client, root, path)
    calm = make_project(tmp_path, "calm")
    (path,) = known_files(calm, 1)
    post_gate(client, calm, path, session_id="calm-session")
    modes = {row["project"]: row for row in client.get("/api/gate/modes").json()}
    assert modes["proj"]["mode"] == "context"
    assert modes["proj"]["why"].startswith("advising instead of refusing: 2 of the last 2")
    assert modes["calm"]["mode"] == "deny" and "too few to judge" in modes["calm"]["why"]
    page = client.get("/stats/").content.decode()
    assert 'id="gate-modes"' in page and "advising instead of refusing" in page
    # The net figure is never shown without its parts.
    assert "Saved " in page and " − added " in page and " − observer " in page


def test_an_explicit_mode_says_it_is_a_setting(client, root, monkeypatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_READ_GATE", "deny")
    (path,) = known_files(root, 1)
    post_gate(client, root, path)
    (row,) = client.get("/api/gate/modes", {"project": "proj"}).json()
    assert row == {"project": "proj", "mode": "deny", "why": "set to deny in Settings (Read gate)"}
