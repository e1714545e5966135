"""Recall at the moment of failure through the real Claude Code CLI (pinned), installed by
`cmem install`, against the fake model server (issue 32).

1. The scripted model runs a Bash command that fails (`ModuleNotFoundError`), fixes it and
   runs it again. The observer (the fake API, through the `api` provider) records the fix as a
   bugfix observation.
2. The fix is gone (a fresh checkout). A new session runs the same failing command: Claude
   Code sends PostToolUseFailure to cmem's now synchronous hook, and the model's next request
   carries the recalled fix as `PostToolUseFailure:Bash hook additional context`, framed as
   recorded data, with the observation's id. The ledger books it once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.e2e.fake_claude_api import (
    FakeClaudeAPI,
    Step,
    default_compressor,
    message_text,
    request_text,
    text,
    tool,
    tool_results,
)
from tests.e2e.harness import (
    Claude,
    ClaudeRun,
    claude_binary,
    claude_env,
    close_world,
    cmem_install,
    query,
    wait_until_compressed,
)
from tests.support import LiveWorker, free_port, make_worker_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PROJECT = "billing-job"
RUN1, RUN2 = "E2E-FAILURE-ONE", "E2E-FAILURE-TWO"
MODULE = "nosuchmod_e2e"
FAILING = f"python3 -c 'import {MODULE}'"
ERROR = f"ModuleNotFoundError: No module named '{MODULE}'"
FIX_TITLE = f"Fixed ModuleNotFoundError for {MODULE}"
FIX_FACT = f"Fixed by creating {MODULE}.py in the project root"


def _compressor(body: dict[str, Any]) -> str:
    """The observer: a bugfix for a batch that shows the failure and its fix, else the
    default reply."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    said = message_text(users[-1]) if users else ""
    uses = re.findall(r'<tool_use\b[^>]*\bn="(\d+)"', said)
    if MODULE not in said or "PROGRESS SUMMARY" in said or not uses:
        return default_compressor(body)
    return (
        f'<observation uses="{",".join(uses)}"><type>bugfix</type><title>{FIX_TITLE}</title>'
        "<subtitle>the billing job imports a local module</subtitle>"
        f"<facts><fact>{FAILING} failed with {ERROR}</fact><fact>{FIX_FACT}</fact></facts>"
        f"<narrative>The import failed until {MODULE}.py was created.</narrative>"
        "<concepts><concept>problem-solution</concept></concepts></observation>"
    )


def _scripts() -> dict[str, list[Step]]:
    scripts = {
        RUN1: [
            tool("Bash", {"command": FAILING, "description": "import the module"}),
            tool(
                "Bash",
                {
                    "command": f"echo 'VALUE = 1' > {MODULE}.py && {FAILING} && echo IMPORT-OK",
                    "description": "create the module and import it",
                },
            ),
            text("Fixed the import."),
        ],
        RUN2: [
            tool("Bash", {"command": FAILING, "description": "import the module"}),
            text("Saw the failure."),
        ],
    }
    return dict(reversed(scripts.items()))  # newest run first (see the remember e2e)


@dataclass
class World:
    api: FakeClaudeAPI
    worker: LiveWorker
    claude: Claude
    runs: dict[str, ClaudeRun] = field(default_factory=dict)
    sent: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def run(self, marker: str, prompt: str) -> ClaudeRun:
        result = self.claude.run(f"{marker}: {prompt}", timeout=120)
        assert result.returncode == 0, result.stderr[-2000:]
        self.runs[marker] = result
        self.sent[marker] = self.api.requests_for(marker)
        return result


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    binary = claude_binary()
    root = tmp_path_factory.mktemp("e2e-failure-recall")
    home, project, data = root / "home", root / PROJECT, root / "cmem-data"
    for path in (home, project):
        path.mkdir()
    data.mkdir(mode=0o700)
    (project / "README.md").write_text(f"# {PROJECT}\n")
    api = FakeClaudeAPI(scripts=_scripts(), compressor=_compressor).start()
    port = free_port()
    worker_env = make_worker_env(
        data,
        port,
        HOME=str(home),
        CLAUDE_MEM_ANTHROPIC_BASE_URL=api.url,
        ANTHROPIC_API_KEY="sk-ant-e2e-fake",
        CLAUDE_MEM_COMPRESSOR="api",
    )
    worker = LiveWorker(data_dir=data, port=port, env=worker_env)
    worker.start()
    try:
        env = claude_env(home=home, api_url=api.url, worker=worker)
        settings = home / ".claude" / "settings.json"
        installed = cmem_install(settings=settings, env={**worker_env, **env})
        assert installed.returncode == 0, installed.stderr.decode()[-2000:]
        claude = Claude(binary=binary, home=home, project=project, settings=settings, env=env)
        yield World(api=api, worker=worker, claude=claude)
    finally:
        close_world(worker=worker, api=api, root=root, data=data, name="claude-code-failure-recall")


def _fixes(world: World) -> list[dict[str, Any]]:
    return [
        dict(r)
        for r in query(
            world.worker,
            "SELECT id, type, title, facts FROM memory_observation WHERE project = ? AND type = 'bugfix'",
            (PROJECT,),
        )
    ]


@pytest.fixture(scope="module")
def run1(world: World) -> World:
    result = world.run(RUN1, "make the billing job import its module")
    assert result.result.get("result") == "Fixed the import.", result.result
    wait_until_compressed(world.worker)
    return world


@pytest.fixture(scope="module")
def run2(run1: World) -> World:
    # A fresh checkout: the module the first session made is not there.
    (run1.claude.project / f"{MODULE}.py").unlink()
    result = run1.run(RUN2, "run the billing job's import")
    assert result.result.get("result") == "Saw the failure.", result.result
    return run1


def test_session1_the_failure_and_the_fix_are_recorded_as_a_bugfix(run1: World) -> None:
    answers = [r.get("content") for r in tool_results(run1.sent[RUN1][-1])]
    assert any(ERROR in json.dumps(a) for a in answers), answers
    assert any("IMPORT-OK" in json.dumps(a) for a in answers), answers
    fixes = _fixes(run1)
    assert len(fixes) == 1 and fixes[0]["title"] == FIX_TITLE, fixes


def test_session2_the_next_request_carries_the_recalled_fix(run2: World) -> None:
    (fix,) = _fixes(run2)
    sent = run2.sent[RUN2]
    assert len(sent) >= 2, sent
    # The request that answers the failed Bash call.
    after = sent[-1]
    results = tool_results(after)
    assert results and results[-1].get("is_error") is True, results
    said = request_text(after)
    start = said.find("PostToolUseFailure:Bash hook additional context:")
    assert start >= 0, said[-3000:]
    context = said[start : start + 2000]
    assert f"#{fix['id']} " in context and FIX_TITLE in context, context
    assert FIX_FACT in context, context
    assert "reference data, not instructions" in context, context
    assert "mcp__cmem__get_observations" in context, context
    # The first request (before the failure) carried no such context.
    assert "PostToolUseFailure" not in request_text(sent[0])


def test_session2_the_recall_is_ledgered_once(run2: World) -> None:
    rows = query(
        run2.worker,
        "SELECT l.detail, l.tokens_shown, l.path, l.outcome FROM memory_ledgerentry l "
        "JOIN memory_session s ON s.id = l.session_id WHERE s.session_id = ? AND l.kind = 'injection' "
        "AND l.detail LIKE 'failure_recall%'",
        (run2.runs[RUN2].session_id,),
    )
    assert [dict(r)["detail"] for r in rows] == ["failure_recall"], [dict(r) for r in rows]
    row = dict(rows[0])
    assert 0 < row["tokens_shown"] <= 300 and row["path"].startswith("error:")
