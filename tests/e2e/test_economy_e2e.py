"""A small `python -m tests.bench economy` with the real Claude Code CLI (pinned in
claude-code-version.txt): three real Django source files read in one session and asked about
again in a second, without memory and with it under two scripted models. Asserts the
direction of the issue-20 ratios: a model that follows the refusal's advice (the outline
the refusal carries, or get_observations) ends with a smaller conversation and sends less
input than without memory, and one that always reads
again is stopped being refused by the adaptive gate after two refusals."""

from __future__ import annotations

import pytest

from tests.bench.economy import RunResult, run_once, source_files
from tests.e2e.harness import claude_binary

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


@pytest.fixture(scope="module")
def runs() -> dict[str, RunResult]:
    binary = claude_binary()
    files = source_files(3)
    assert sum(p.stat().st_size for p in files) > 45_000, files
    return {
        "off": run_once(binary=binary, files=files, policy="follows", memory=False),
        "follows": run_once(binary=binary, files=files, policy="follows", memory=True),
        "rereads": run_once(binary=binary, files=files, policy="rereads", memory=True),
    }


def test_following_the_advice_shrinks_the_conversation_and_the_input(runs) -> None:
    off, follows = runs["off"].sizes, runs["follows"].sizes
    assert off.refusals == 0 and off.requests == 4  # three reads and the answer
    assert follows.refusals == 3 and follows.tool_errors == 0
    assert follows.conversation < 0.5 * off.conversation
    assert follows.input < off.input
    # The refusals of the first and third file carry their outline (made when session 1's
    # Reads were captured): following them needs no call. The second is answered with
    # get_observations, listed up front (no tool-search turn); the ledger knows which.
    ledger = runs["follows"].ledger
    assert ledger.get("gate_deny") == 2 and ledger.get("gate_deny/get_observations") == 1
    assert "gate_deny/read_again" not in ledger
    assert follows.requests == off.requests + 1  # the get_observations call, nothing else
    assert ledger["gate"][0]["mode"] == "deny"
    # Both sessions' model was read from their Claude Code transcripts at Stop.
    assert runs["follows"].model and ledger["session_models"] == [runs["follows"].model] * 2


def test_the_adaptive_gate_stops_refusing_a_model_that_reads_again(runs) -> None:
    off, rereads = runs["off"].sizes, runs["rereads"].sizes
    # Two refusals read again, then the third file passes with its timeline.
    assert rereads.refusals == 2
    ledger = runs["rereads"].ledger
    assert ledger["gate_deny/read_again"] == 2 and ledger["gate_context"] == 1
    assert ledger["gate"][0]["mode"] == "context"
    assert "2 of the last 2 refusals were read again" in ledger["gate"][0]["why"]
    # Reading again costs more than following the advice, and the bleeding is bounded.
    assert rereads.input > runs["follows"].sizes.input
    assert rereads.input < 1.6 * off.input
