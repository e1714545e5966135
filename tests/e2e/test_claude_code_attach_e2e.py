"""`work_state_write` through the real Claude Code CLI (pinned) and cmem's real MCP server.

The scripted model loads the deferred MCP tool with ToolSearch, writes a report outside the
project, then calls `mcp__cmem__work_state_write` (the `cmem install` route's name) to
attach the report and a chart a script made. The tool answers in plain text; the call's
PostToolUse hook reads the files and the worker records them on the request's card, which
My Work shows marked attached with the call's title and note.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.fake_claude_api import FakeClaudeAPI, text, tool, tool_results
from tests.e2e.harness import (
    Claude,
    ClaudeRun,
    claude_binary,
    claude_env,
    close_world,
    cmem_install,
    query,
    wait_for,
)
from tests.support import LiveWorker, free_port, make_worker_env, owner_open

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

RUN = "E2E-ATTACH-RUN"
TOOL = "mcp__cmem__work_state_write"


@dataclass
class World:
    api: FakeClaudeAPI
    worker: LiveWorker
    claude: Claude
    report: Path
    chart: Path
    runs: dict[str, ClaudeRun] = field(default_factory=dict)
    sent: list[dict[str, Any]] = field(default_factory=list)


def _script(report: Path, chart: Path) -> list[Any]:
    return [
        tool("ToolSearch", {"query": f"select:{TOOL}"}),
        tool("Write", {"file_path": str(report), "content": "# Release notes\n\nAll green.\n"}),
        tool(
            TOOL,
            {
                "paths": [str(report), str(chart)],
                "title": "Release 2.4",
                "note": "Notes and the latency chart for the review.",
            },
        ),
        text("Wrote the notes and attached them."),
    ]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    binary = claude_binary()
    root = tmp_path_factory.mktemp("e2e-attach")
    home, project, outside, data = (
        root / "home",
        root / "release-app",
        root / "out",
        root / "cmem-data",
    )
    for path in (home, project, outside):
        path.mkdir()
    data.mkdir(mode=0o700)
    (project / "README.md").write_text("# release-app\n")
    chart = outside / "latency.svg"
    chart.write_text('<svg xmlns="http://www.w3.org/2000/svg"><rect width="4"/></svg>\n')
    report = outside / "RELEASE.md"
    api = FakeClaudeAPI(scripts={RUN: _script(report, chart)}).start()
    port = free_port()
    worker_env = make_worker_env(data, port, HOME=str(home), CLAUDE_MEM_COMPRESSOR="offline")
    worker = LiveWorker(data_dir=data, port=port, env=worker_env)
    worker.start()
    try:
        env = claude_env(home=home, api_url=api.url, worker=worker)
        settings = home / ".claude" / "settings.json"
        installed = cmem_install(settings=settings, env={**worker_env, **env})
        assert installed.returncode == 0, installed.stderr.decode()[-2000:]
        claude = Claude(binary=binary, home=home, project=project, settings=settings, env=env)
        yield World(api=api, worker=worker, claude=claude, report=report, chart=chart)
    finally:
        close_world(worker=worker, api=api, root=root, data=data, name="claude-code-attach")


@pytest.fixture(scope="module")
def ran(world: World) -> World:
    result = world.claude.run(f"{RUN}: write the release notes and attach them", timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.result.get("result") == "Wrote the notes and attached them.", result.result
    world.runs[RUN] = result
    world.sent = world.api.requests_for(RUN)
    return world


def _rows(world: World) -> list[Any]:
    return query(
        world.worker,
        "SELECT d.original_path, d.attached, d.title, d.note, p.text AS prompt "
        "FROM deliverables_deliverable d LEFT JOIN memory_prompt p ON p.id = d.prompt_id "
        "ORDER BY d.id",
    )


def test_the_tool_answers_the_model_in_plain_text(ran: World) -> None:
    answers = [r for body in ran.sent for r in tool_results(body)]
    said = [str(r.get("content")) for r in answers if "will be attached" in str(r.get("content"))]
    assert said, [str(r.get("content"))[:200] for r in answers]
    assert "2 file(s) will be attached to the current request on My Work" in said[-1]
    assert '{"result"' not in said[-1]


def test_the_attached_files_are_recorded_on_the_request(ran: World) -> None:
    rows = wait_for(lambda: len(_rows(ran)) == 2 and _rows(ran), timeout=30) or _rows(ran)
    by_name = {Path(r["original_path"]).name: r for r in rows}
    assert set(by_name) == {"RELEASE.md", "latency.svg"}, [dict(r) for r in rows]
    for row in by_name.values():
        assert row["attached"] == 1 and row["title"] == "Release 2.4"
        assert row["note"] == "Notes and the latency chart for the review."
        assert row["prompt"].startswith(RUN)


def test_my_work_shows_them_marked_attached(ran: World) -> None:
    wait_for(lambda: len(_rows(ran)) == 2, timeout=30)
    page = owner_open(ran.worker.data_dir, ran.worker.url + "/work/").decode()
    card = page[page.index(f"{RUN}: write the release notes") :]
    assert "RELEASE.md" in card and "latency.svg" in card
    assert card.count(">attached</span>") >= 2 and "Release 2.4" in card
