"""The whole loop with the real Claude Code CLI (pinned in claude-code-version.txt).

Three runs share one worker, one scratch HOME and one project, in order:
1. a session reads, edits, runs a command and writes a report outside the project: cmem
   stores the session, prompt, each tool use, a summary at Stop and the deliverable;
2. a new session starts from the SessionStart index, its first Read of the observed file is
   refused with the `Current:` timeline, the repeated Read passes and the Edit succeeds;
3. `/compact` in that session (SessionStart source=compact) resets its file views, so the
   next Read is gated again.
The fake API (fake_claude_api.py) scripts the model and also answers cmem's compressor.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.fake_claude_api import FakeClaudeAPI, request_text, text, tool, tool_results
from tests.e2e.harness import (
    PINNED_VERSION,
    Claude,
    ClaudeRun,
    claude_binary,
    claude_env,
    cmem_install,
    query,
    wait_for,
    wait_until_compressed,
)
from tests.support import LiveWorker, free_port, make_worker_env
from tests.support.e2e_record import e2e_record

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

RUN1, RUN2, RUN3 = "E2E-RUN-ONE", "E2E-RUN-TWO", "E2E-RUN-THREE"
# Resuming run 1's conversation after runs 2 and 3 worked on the project, then again.
RUN4, RUN5 = "E2E-RUN-FOUR", "E2E-RUN-FIVE"
RESUMED = "new since this conversation's index"

# Large enough (several KB) that the gate does not wave it through as a small file.
TARGET = "".join(
    f"def handler_{i}(request):\n    return {{'handler': {i}, 'status': 'ok'}}\n\n\n"
    for i in range(60)
)


@dataclass
class World:
    api: FakeClaudeAPI
    worker: LiveWorker
    claude: Claude
    target: Path
    report: Path
    runs: dict[str, ClaudeRun] = field(default_factory=dict)
    known_before_run2: list[tuple[int, str]] = field(default_factory=list)
    # The requests Claude Code sent during each run, taken when the run ended.
    sent: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    views_before_compact: list[dict[str, Any]] = field(default_factory=list)

    def session_pk(self, run: str) -> int:
        rows = query(
            self.worker,
            "SELECT id FROM memory_session WHERE session_id = ?",
            (self.runs[run].session_id,),
        )
        assert rows, f"no session stored for {run} ({self.runs[run].session_id})"
        return int(rows[0]["id"])


def _scripts(target: Path, report: Path) -> dict[str, list[Any]]:
    return {
        RUN1: [
            tool("Read", {"file_path": str(target)}),
            tool(
                "Edit",
                {
                    "file_path": str(target),
                    "old_string": "'handler': 7,",
                    "new_string": "'handler': 7, 'edited': 1,",
                },
            ),
            tool(
                "Bash",
                {
                    "command": "python3 -c 'print(6 * 7)' | tee answer.txt",
                    "description": "Compute the answer",
                },
            ),
            tool(
                "Write",
                {
                    "file_path": str(report),
                    "content": "# Handler report\n\nhandler_7 now says edited.\n",
                },
            ),
            text("Edited handler_7 and wrote the report."),
        ],
        RUN2: [
            tool("Read", {"file_path": str(target)}),
            tool(
                "Read",
                {"file_path": str(target)},
                note="The memory said enough, but I need the full file.",
            ),
            tool(
                "Edit",
                {
                    "file_path": str(target),
                    "old_string": "'handler': 8,",
                    "new_string": "'handler': 8, 'edited': 2,",
                },
            ),
            text("Edited handler_8."),
        ],
        RUN3: [
            tool("Read", {"file_path": str(target)}),
            text("Checked the file again."),
        ],
        RUN4: [text("Caught up.")],
        RUN5: [text("Nothing new.")],
    }


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    binary = claude_binary()
    root = tmp_path_factory.mktemp("e2e")
    home, project, outside, data = (
        root / "home",
        root / "shop-api",
        root / "reports",
        root / "cmem-data",
    )
    for path in (home, project, outside):
        path.mkdir()
    data.mkdir(mode=0o700)
    target = project / "handlers.py"
    target.write_text(TARGET)
    (project / "README.md").write_text("# shop-api\n")

    api = FakeClaudeAPI(scripts=_scripts(target, outside / "report.md")).start()
    port = free_port()
    # The compressor goes through the fake API, so the API path of compression is exercised.
    worker_env = make_worker_env(
        data,
        port,
        HOME=str(home),
        CLAUDE_MEM_ANTHROPIC_BASE_URL=api.url,
        ANTHROPIC_API_KEY="sk-ant-e2e-fake",
        CLAUDE_MEM_COMPRESSOR="api",
        # claude-mem's refusing gate (docs/reference/source-rules.md), pinned: the adaptive
        # default has its own tests.
        CLAUDE_MEM_READ_GATE="deny",
    )
    worker = LiveWorker(data_dir=data, port=port, env=worker_env)
    worker.start()
    try:
        env = claude_env(home=home, api_url=api.url, worker=worker)
        settings = home / ".claude" / "settings.json"
        installed = cmem_install(settings=settings, env={**worker_env, **env})
        assert installed.returncode == 0, (
            f"cmem install failed: {installed.stderr.decode()[-2000:]}"
        )
        assert settings.exists(), "cmem install --settings wrote no file"
        claude = Claude(binary=binary, home=home, project=project, settings=settings, env=env)
        yield World(
            api=api, worker=worker, claude=claude, target=target, report=outside / "report.md"
        )
    finally:
        worker.stop()
        api.stop()
        # Kept for post-mortems: what Claude Code and the compressor sent.
        (root / "requests.json").write_text(json.dumps(api.requests, indent=1))
        (root / "compressor_requests.json").write_text(
            json.dumps(api.compressor_requests, indent=1)
        )
        e2e_record(
            data_dir=data,
            scratch=root,
            name=f"claude-code-{PINNED_VERSION}",
            agent="claude-code",
            version=PINNED_VERSION,
        )


@pytest.fixture(scope="module")
def run1(world: World) -> World:
    result = world.claude.run(
        f"{RUN1}: edit handler 7, run a check and write a report to ../reports/report.md"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.result.get("result") == "Edited handler_7 and wrote the report.", result.result
    world.runs[RUN1] = result
    wait_until_compressed(world.worker)
    wait_for(
        lambda: query(
            world.worker,
            "SELECT 1 FROM memory_summary WHERE session_id = ?",
            (world.session_pk(RUN1),),
        )
    )
    return world


@pytest.fixture(scope="module")
def run2(run1: World) -> World:
    rows = query(
        run1.worker,
        "SELECT id, title FROM memory_observation WHERE project = 'shop-api' ORDER BY id",
    )
    run1.known_before_run2 = [(int(r["id"]), str(r["title"])) for r in rows]
    result = run1.claude.run(f"{RUN2}: add an edited flag to handler 8")
    assert result.returncode == 0, result.stderr[-2000:]
    run1.runs[RUN2] = result
    run1.sent[RUN2] = run1.api.requests_for(RUN2)
    return run1


@pytest.fixture(scope="module")
def run3(run2: World) -> World:
    session = run2.runs[RUN2].session_id
    # Run 2 edited handlers.py. Until its Edit is compressed, the newest observation of the
    # file still carries the old content hash, so the gate rightly treats the file as changed
    # and lets the Read through with context. Wait, so run 3 tests the compact reset alone.
    wait_until_compressed(run2.worker)
    run2.views_before_compact = [
        dict(v)
        for v in query(
            run2.worker,
            "SELECT path, denied, partial FROM memory_fileview WHERE session_id = ?",
            (run2.session_pk(RUN2),),
        )
    ]
    compact = run2.claude.run("/compact", resume=session)
    assert compact.returncode == 0, compact.stderr[-2000:]
    result = run2.claude.run(f"{RUN3}: look at the handlers again", resume=session)
    assert result.returncode == 0, result.stderr[-2000:]
    run2.runs[RUN3] = result
    run2.sent[RUN3] = run2.api.requests_for(RUN3)
    return run2


def test_run1_stores_session_and_prompt(run1: World) -> None:
    rows = query(
        run1.worker,
        "SELECT * FROM memory_session WHERE session_id = ?",
        (run1.runs[RUN1].session_id,),
    )
    assert len(rows) == 1
    assert rows[0]["project"] == "shop-api"
    prompts = query(
        run1.worker, "SELECT number, text FROM memory_prompt WHERE session_id = ?", (rows[0]["id"],)
    )
    assert [(p["number"], RUN1 in p["text"]) for p in prompts] == [(1, True)]


def test_run1_compresses_each_tool_use(run1: World) -> None:
    events = query(
        run1.worker,
        "SELECT tool_name, status FROM memory_event WHERE session_id = ? AND kind = 'observation'",
        (run1.session_pk(RUN1),),
    )
    assert sorted(e["tool_name"] for e in events) == ["Bash", "Edit", "Read", "Write"]
    assert {e["status"] for e in events} == {"done"}
    observations = query(
        run1.worker,
        "SELECT id, title, compressor FROM memory_observation WHERE session_id = ?",
        (run1.session_pk(RUN1),),
    )
    assert observations, "no observation stored"
    # At least one went through the (fake) Anthropic API rather than the offline compressor.
    assert run1.api.compressor_requests, "the worker never called the API to compress"
    assert any(o["compressor"] and o["compressor"] != "offline" for o in observations)
    modified = query(
        run1.worker,
        "SELECT path FROM memory_observationfile WHERE role = 'modified' AND project = 'shop-api'",
    )
    assert "handlers.py" in {m["path"] for m in modified}


def test_run1_summarizes_at_stop_and_keeps_the_deliverable(run1: World) -> None:
    summaries = query(
        run1.worker,
        "SELECT request FROM memory_summary WHERE session_id = ?",
        (run1.session_pk(RUN1),),
    )
    assert summaries and summaries[0]["request"]
    deliverables = query(
        run1.worker,
        "SELECT original_path, stored_path FROM deliverables_deliverable WHERE session_id = ?",
        (run1.session_pk(RUN1),),
    )
    assert [d["original_path"] for d in deliverables] == [str(run1.report)]
    stored = run1.worker.data_dir / "deliverables" / deliverables[0]["stored_path"]
    assert stored.read_text() == run1.report.read_text()


@pytest.fixture(scope="module")
def run5(run3: World) -> World:
    """`claude --resume` of run 1's conversation: runs 2 and 3 worked on the project since
    its index, so the resume gets what they added; resumed again at once, it gets nothing."""
    wait_until_compressed(run3.worker)
    first = run3.runs[RUN1].session_id
    for marker, prompt in ((RUN4, "what changed meanwhile?"), (RUN5, "and now?")):
        result = run3.claude.run(f"{marker}: {prompt}", resume=first)
        assert result.returncode == 0, result.stderr[-2000:]
        run3.runs[marker] = result
        run3.sent[marker] = run3.api.requests_for(marker)
    return run3


def test_run2_first_request_carries_the_index(run2: World) -> None:
    first = run2.sent[RUN2][0]
    said = request_text(first)
    assert "SessionStart hook additional context" in said
    # Every observation of run 1 is in the index, by id and title.
    assert run2.known_before_run2
    for pk, title in run2.known_before_run2:
        # One index row holds the id and the title.
        assert re.search(rf"(?m)^\W*#?{pk}\b.*{re.escape(title)}", said), (
            f"#{pk} {title!r} is not in the index"
        )


def test_run2_gate_refuses_then_passes_then_edit_succeeds(run2: World) -> None:
    last = run2.sent[RUN2][-1]
    results = tool_results(last)
    assert len(results) == 3, results
    refused, passed, edited = results
    assert refused.get("is_error") is True
    refused_text = (
        refused["content"] if isinstance(refused["content"], str) else str(refused["content"])
    )
    assert "Current:" in refused_text
    assert not passed.get("is_error"), passed
    assert "handler_59" in str(passed["content"])
    assert not edited.get("is_error"), edited
    assert "'handler': 8, 'edited': 2," in run2.target.read_text()
    assert run2.runs[RUN2].result.get("result") == "Edited handler_8."


def test_run3_compact_resets_file_views(run3: World) -> None:
    session = run3.session_pk(RUN2)
    # Before /compact the session held a full, allowed view of the file (run 2's second Read).
    assert any(not v["denied"] and not v["partial"] for v in run3.views_before_compact), (
        run3.views_before_compact
    )
    # The Read after /compact is gated again: the model no longer holds the file.
    last = run3.sent[RUN3][-1]
    results = tool_results(last)
    after_compact = results[-1]
    assert after_compact.get("is_error") is True, after_compact
    assert "Current:" in str(after_compact["content"])
    views = query(
        run3.worker, "SELECT path, denied FROM memory_fileview WHERE session_id = ?", (session,)
    )
    # Only the refusal after /compact is remembered; the full read from before is gone.
    assert all(v["denied"] for v in views), [dict(v) for v in views]


def test_resume_gets_what_other_sessions_added_then_nothing(run5: World) -> None:
    caught_up = request_text(run5.sent[RUN4][0])
    assert caught_up.count(RESUMED) == 1, caught_up[-4000:]
    # Run 2's work is there, under its ids; run 1's own rows are not repeated.
    added = query(
        run5.worker,
        "SELECT id, title FROM memory_observation WHERE session_id = ? ORDER BY id",
        (run5.session_pk(RUN2),),
    )
    assert added
    block = caught_up[caught_up.index(RESUMED) :]
    for row in added[-3:]:
        assert f"{row['id']} " in block and str(row["title"])[:40] in block, block[:3000]
    for pk, title in run5.known_before_run2:
        assert not re.search(rf"(?m)^{pk} .*{re.escape(title)}", block), title
    # The second resume, with nothing new: no second block appended after the history.
    again = request_text(run5.sent[RUN5][0])
    assert again.count(RESUMED) == 1, again[-4000:]
