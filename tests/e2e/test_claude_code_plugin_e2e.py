"""cmem as a Claude Code plugin, installed with the real (pinned) CLI's plugin commands.

`claude plugin marketplace add <repo>` then `claude plugin install cmem@cmem` in a scratch
HOME, no `cmem install`: two sessions then show capture (session, prompt, the Read), the
SessionStart index naming the plugin's MCP tools, the MCP server in Claude Code's tool list
under the plugin's name, and the gate refusing the known file's first Read.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.fake_claude_api import FakeClaudeAPI, request_text, text, tool, tool_results
from tests.e2e.harness import (
    Claude,
    claude_binary,
    claude_env,
    close_world,
    query,
    wait_for,
    wait_until_compressed,
)
from tests.support.paths import CMEM, REPO
from tests.support.worker import LiveWorker, free_port, make_worker_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

RUN1, RUN2, RUN3 = "PLUGIN-RUN-ONE", "PLUGIN-RUN-TWO", "PLUGIN-RUN-ATTACH"
ATTACH = "mcp__plugin_cmem_cmem__work_state_write"
TARGET = "".join(f"def view_{i}(request):\n    return {{'view': {i}}}\n\n\n" for i in range(60))


@dataclass
class PluginWorld:
    api: FakeClaudeAPI
    worker: LiveWorker
    claude: Claude
    installed: list[subprocess.CompletedProcess[str]]
    sent: dict[str, list[dict[str, Any]]]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PluginWorld]:
    binary = claude_binary()
    root = tmp_path_factory.mktemp("plugin-e2e")
    home, project, data = root / "home", root / "blog-api", root / "cmem-data"
    home.mkdir()
    project.mkdir()
    data.mkdir(mode=0o700)
    target = project / "views.py"
    target.write_text(TARGET)
    (root / "summary.md").write_text("# Summary\n")
    scripts = {
        RUN1: [tool("Read", {"file_path": str(target)}), text("Read the views.")],
        RUN2: [tool("Read", {"file_path": str(target)}), text("Looked again.")],
        # The plugin route's name for work_state_write, loaded through Claude Code's tool search.
        RUN3: [
            tool("ToolSearch", {"query": f"select:{ATTACH}"}),
            tool(ATTACH, {"paths": [str(root / "summary.md")], "title": "Summary"}),
            text("Attached the summary."),
        ],
    }
    api = FakeClaudeAPI(scripts=scripts).start()
    port = free_port()
    worker = LiveWorker(data_dir=data, port=port, env=make_worker_env(data, port, HOME=str(home)))
    worker.start()
    try:
        env = claude_env(home=home, api_url=api.url, worker=worker)
        installed = [
            subprocess.run(
                [str(binary), "plugin", *args],
                env=env,
                cwd=home,
                capture_output=True,
                text=True,
                timeout=120,
            )  # fmt: skip
            for args in (["marketplace", "add", str(REPO)], ["install", "cmem@cmem"])
        ]
        settings = home / ".claude" / "settings.json"
        claude = Claude(binary=binary, home=home, project=project, settings=settings, env=env)
        world = PluginWorld(api=api, worker=worker, claude=claude, installed=installed, sent={})
        yield world
    finally:
        close_world(worker=worker, api=api, root=root, data=data, name="claude-code-plugin")


@pytest.fixture(scope="module")
def ran(world: PluginWorld) -> PluginWorld:
    for done in world.installed:
        assert done.returncode == 0, done.stdout + done.stderr
    settings = json.loads(world.claude.settings.read_text())
    assert settings["enabledPlugins"] == {"cmem@cmem": True} and "hooks" not in settings
    first = world.claude.run(f"{RUN1}: read the views")
    assert first.returncode == 0, first.stderr[-2000:]
    world.sent[RUN1] = world.api.requests_for(RUN1)
    wait_until_compressed(world.worker)
    second = world.claude.run(f"{RUN2}: look at the views again")
    assert second.returncode == 0, second.stderr[-2000:]
    world.sent[RUN2] = world.api.requests_for(RUN2)
    return world


def test_plugin_hooks_capture_the_session(ran: PluginWorld) -> None:
    sessions = query(ran.worker, "SELECT id, project FROM memory_session ORDER BY id")
    assert [s["project"] for s in sessions] == ["blog-api", "blog-api"]
    reads = query(
        ran.worker,
        "SELECT tool_name FROM memory_event WHERE session_id = ? AND kind = 'observation'",
        (sessions[0]["id"],),
    )
    assert [r["tool_name"] for r in reads] == ["Read"]
    assert wait_for(lambda: query(ran.worker, "SELECT 1 FROM memory_summary"))
    assert (ran.worker.data_dir / "install-route").read_text().strip() == "plugin"


def test_the_plugins_mcp_server_reaches_claude_code_under_the_plugin_name(ran: PluginWorld) -> None:
    tools = {t["name"] for t in ran.sent[RUN1][0].get("tools", [])}
    assert "mcp__plugin_cmem_cmem__search" in tools or any(
        "mcp__plugin_cmem_cmem__search" in json.dumps(r) for r in ran.sent[RUN1]
    ), sorted(tools)


def test_the_index_names_the_plugins_tools_and_the_gate_refuses(ran: PluginWorld) -> None:
    said = request_text(ran.sent[RUN2][0])
    assert "SessionStart hook additional context" in said
    assert "mcp__plugin_cmem_cmem__get_observations([IDs])" in said
    refused = tool_results(ran.sent[RUN2][-1])[0]
    assert refused.get("is_error") is True and "Current:" in str(refused["content"])
    # The menu names the code tools by the plugin's name: smart_unfold when the refusal
    # carries the file's outline (made in the background since run 1), else smart_outline.
    menu = str(refused["content"])
    assert "mcp__plugin_cmem_cmem__smart_unfold(" in menu or (
        "mcp__plugin_cmem_cmem__smart_outline(" in menu
    )
    assert "mcp__cmem__" not in menu


def test_work_state_write_attaches_through_the_plugins_name(ran: PluginWorld) -> None:
    """After the capture tests: its session comes after the two they count."""
    done = ran.claude.run(f"{RUN3}: attach the summary", timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.result.get("result") == "Attached the summary.", done.result
    answers = [str(r.get("content")) for b in ran.api.requests_for(RUN3) for r in tool_results(b)]
    assert any("will be attached to the current request" in a for a in answers), answers
    rows = wait_for(
        lambda: query(
            ran.worker,
            "SELECT original_path, attached, title FROM deliverables_deliverable",
        ),
        timeout=30,
    )
    assert [(r["original_path"].rsplit("/", 1)[-1], r["attached"], r["title"]) for r in rows] == [
        ("summary.md", 1, "Summary")
    ]


def test_cmem_uninstall_removes_the_plugin_through_the_real_cli(ran: PluginWorld) -> None:
    """Last in this module: it takes the plugin away. `cmem uninstall` finds the plugin route
    and runs the real `claude plugin uninstall` (on the hooks' PATH here), which removes it from
    Claude Code's settings; the recorded route goes with it."""
    env = {**ran.claude.env, "PATH": f"{ran.claude.binary.parent}:{ran.claude.env['PATH']}"}
    env.pop("CLAUDE_MEM_WORKER_PORT", None)  # uninstall never needs the worker
    done = subprocess.run(
        [CMEM, "uninstall"], env=env, cwd=Path(env["HOME"]), capture_output=True, text=True, timeout=180
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Claude Code plugin cmem@cmem removed (`claude plugin uninstall`)" in done.stdout
    settings = json.loads(ran.claude.settings.read_text())
    assert "cmem@cmem" not in (settings.get("enabledPlugins") or {}) and "hooks" not in settings
    assert not (ran.worker.data_dir / "install-route").exists()
    listed = subprocess.run(
        [str(ran.claude.binary), "plugin", "list"], env=env, capture_output=True, text=True, timeout=120
    )  # fmt: skip
    assert "cmem@cmem" not in listed.stdout, listed.stdout
