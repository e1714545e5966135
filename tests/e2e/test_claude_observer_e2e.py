"""The `claude` provider end to end: the real pinned Claude Code CLI is cmem's observer.

A real `cmem serve` compresses with CLAUDE_MEM_PROVIDER=claude, so every batch runs
`claude -p` (the pinned binary) headless; the CLI talks to the fake Messages API on 127.0.0.1
through CLAUDE_MEM_CLAUDE_BASE_URL / _API_KEY (CI proves the path, not a subscription login).
Claude Code itself runs with cmem's hooks installed in the same HOME, so an observer session
that was observed would show up as a Session, Events or Observations of its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from memory.compression.prompts import system_prompt
from tests.e2e.fake_claude_api import OBSERVER_MARK, FakeClaudeAPI, text, tool
from tests.e2e.harness import (
    PINNED_VERSION,
    Claude,
    ClaudeRun,
    claude_binary,
    claude_env,
    cmem_install,
    get_json,
    query,
    wait_for,
    wait_until_compressed,
)
from tests.support import LiveWorker, free_port, make_worker_env
from tests.support.e2e_record import e2e_record

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

MARK = "E2E-OBSERVER-RUN"
SOURCE = "".join(f"def route_{i}(request):\n    return {{'route': {i}}}\n\n\n" for i in range(40))


@dataclass
class World:
    api: FakeClaudeAPI
    worker: LiveWorker
    run: ClaudeRun


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    binary = claude_binary()
    root = tmp_path_factory.mktemp("observer")
    home, project, data = root / "home", root / "routes-api", root / "cmem-data"
    home.mkdir()
    project.mkdir()
    data.mkdir(mode=0o700)
    (project / "routes.py").write_text(SOURCE)
    script = [
        tool("Read", {"file_path": str(project / "routes.py")}),
        tool("Bash", {"command": "grep -c def routes.py", "description": "Count the routes"}),
        text("There are forty routes."),
    ]
    api = FakeClaudeAPI(scripts={MARK: script}).start()
    port = free_port()
    worker_env = make_worker_env(
        data,
        port,
        HOME=str(home),
        CLAUDE_MEM_PROVIDER="claude",
        CLAUDE_MEM_CLAUDE_PATH=str(binary),
        CLAUDE_MEM_CLAUDE_BASE_URL=api.url,
        CLAUDE_MEM_CLAUDE_API_KEY="sk-ant-e2e-observer",
        # What a hook-spawned worker inherits from Claude Code: never the observer's.
        ANTHROPIC_BASE_URL="http://127.0.0.1:9",
        ANTHROPIC_AUTH_TOKEN="claude-code-own-token",
        IS_SANDBOX="1",
    )
    worker = LiveWorker(data_dir=data, port=port, env=worker_env)
    worker.start()
    try:
        env = claude_env(home=home, api_url=api.url, worker=worker)
        settings = home / ".claude" / "settings.json"
        installed = cmem_install(settings=settings, env={**worker_env, **env})
        assert installed.returncode == 0, installed.stderr.decode()[-2000:]
        claude = Claude(binary=binary, home=home, project=project, settings=settings, env=env)
        run = claude.run(f"{MARK}: how many routes are there?", timeout=120)
        assert run.returncode == 0, run.stderr[-2000:]
        wait_until_compressed(worker, timeout=90)
        wait_for(lambda: query(worker, "SELECT 1 FROM memory_summary"), timeout=90)
        yield World(api=api, worker=worker, run=run)
    finally:
        worker.stop()
        api.stop()
        (root / "compressor_requests.json").write_text(
            json.dumps(api.compressor_requests, indent=1)
        )
        e2e_record(
            data_dir=data,
            scratch=root,
            name=f"claude-code-observer-{PINNED_VERSION}",
            agent="claude-code",
            version=PINNED_VERSION,
        )


def test_batches_are_compressed_by_the_claude_cli(world: World) -> None:
    rows = query(world.worker, "SELECT title, compressor FROM memory_observation")
    assert rows, "no observation stored"
    model_written = [r for r in rows if r["title"].startswith("E2E API observation")]
    assert model_written, [dict(r) for r in rows]
    assert {r["compressor"] for r in model_written} == {"claude-haiku-4-5-20251001"}
    summary = query(world.worker, "SELECT request, compressor FROM memory_summary")
    assert [s["request"] for s in summary] == ["E2E summary of the session"]


def test_the_observer_runs_headless_with_cmems_prompt_and_no_tools(world: World) -> None:
    sent = world.api.compressor_requests
    assert sent, "the CLI never asked the fake API"
    for body in sent:
        system = json.dumps(body.get("system"))
        assert OBSERVER_MARK in system
        assert body.get("tools") == []
        assert body.get("model") == "claude-haiku-4-5-20251001"
        assert (body.get("thinking") or {}).get("type") != "enabled"
    # Claude Code's own system prompt (its tool instructions) is replaced, not appended to:
    # beyond cmem's prompt the CLI adds only its one-line identity and billing header.
    ours = len(system_prompt())
    for body in sent:
        blocks = body.get("system") or []
        extra = sum(len(b.get("text", "")) for b in blocks) - ours
        assert 0 <= extra < 300, [b.get("text", "")[:80] for b in blocks]


def test_the_observer_session_is_never_observed(world: World) -> None:
    sessions = query(world.worker, "SELECT session_id, cwd FROM memory_session")
    assert [s["session_id"] for s in sessions] == [world.run.session_id]
    assert not any("observer-cwd" in (s["cwd"] or "") for s in sessions)
    prompts = query(world.worker, "SELECT text FROM memory_prompt")
    assert len(prompts) == 1 and MARK in prompts[0]["text"]
    events = query(world.worker, "SELECT DISTINCT session_id FROM memory_event")
    assert len(events) == 1


def test_usage_and_cost_reach_the_ledger(world: World) -> None:
    rows = query(
        world.worker,
        "SELECT provider, model, input_tokens, output_tokens, cost_usd FROM memory_ledgerentry "
        "WHERE kind = 'observer'",
    )
    assert rows and {r["provider"] for r in rows} == {"claude"}
    assert all(r["input_tokens"] > 0 and r["output_tokens"] > 0 for r in rows)
    assert all(r["cost_usd"] > 0 for r in rows)  # the CLI's own total_cost_usd
    ledger = get_json(world.worker, "/api/ledger")
    assert ledger["observer"][0]["provider"] == "claude"
