"""The MCP server driven over stdio by the official SDK client, against a real worker."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from memory.agents.install.claude_code import hook_entries
from memory.agents.install.mcp import mcp_register, mcp_unregister, plugin_dir_write
from tests.support import CMEM, REPO, LiveWorker, free_port, make_worker_env, stop_detached_worker

SAMPLES = REPO / "tests" / "retrieval" / "outline_samples"
TOOLS = {
    "search",
    "timeline",
    "get_observations",
    "smart_outline",
    "smart_unfold",
    "get_tool_uses",
    "smart_search",
    "forget",
    "remember",
    "memory_correct",
    # Registered by deliverables (memory.retrieval.mcp_registry), not by mcp_server itself.
    "work_state_write",
}
SEED = "import json; from tests.retrieval.retrieval_seed import seed; print(json.dumps(seed()))"


def _seed(worker: LiveWorker) -> dict[str, list[int]]:
    env = {**worker.env, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [CMEM, "manage", "shell", "-c", SEED],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _text(result: Any) -> str:
    return "\n".join(part.text for part in result.content if part.type == "text")


async def _session_run(env: dict[str, str], cwd: Path, script: Any) -> Any:
    params = StdioServerParameters(command=CMEM, args=["mcp"], env=env, cwd=str(cwd))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.serverInfo.name == "cmem"
        return await script(session)


@pytest.mark.slow
def test_every_tool_over_stdio(live_worker: LiveWorker) -> None:
    ids = _seed(live_worker)
    obs = ids["observation"]

    async def script(session: ClientSession) -> dict[str, str]:
        tools = (await session.list_tools()).tools
        assert {tool.name for tool in tools} == TOOLS
        described = {tool.name: tool.description or "" for tool in tools}
        assert (
            "get_observations" in described["search"]
            and "~300 tokens" in described["get_observations"]
        )
        assert "smart_unfold" in described["smart_outline"]
        # The tools a refusal names are listed up front: Claude Code would otherwise defer
        # them behind its tool search, one more turn that resends the conversation.
        loaded = {t.name for t in tools if (t.meta or {}).get("anthropic/alwaysLoad") is True}
        assert loaded == {"get_observations", "smart_outline", "smart_unfold"}
        # Plain text only: no output schema, so no {"result": "..."} structured result that
        # Claude Code would hand the model as escaped JSON.
        assert all(tool.outputSchema is None for tool in tools)
        plain = await session.call_tool("search", {"query": "connection pool", "project": "shop"})
        assert plain.structuredContent is None
        assert [part.type for part in plain.content] == ["text"]
        assert not plain.content[0].text.lstrip().startswith("{")
        out = {}
        out["search"] = _text(
            await session.call_tool("search", {"query": "connection pool", "project": "shop"})
        )
        out["timeline"] = _text(
            await session.call_tool(
                "timeline", {"anchor": str(obs[2]), "depth_before": 1, "depth_after": 1}
            )
        )
        out["get"] = _text(await session.call_tool("get_observations", {"ids": [obs[3], obs[1]]}))
        out["outline"] = _text(
            await session.call_tool("smart_outline", {"file_path": "inventory.py"})
        )
        out["unfold"] = _text(
            await session.call_tool(
                "smart_unfold", {"file_path": "inventory.py", "symbol_name": "Warehouse.reserve"}
            )
        )
        out["symbols"] = _text(
            await session.call_tool("smart_search", {"query": "rate limiter", "path": "."})
        )
        out["preview"] = _text(await session.call_tool("forget", {"ids": [obs[1]]}))
        out["forget"] = _text(
            await session.call_tool("forget", {"ids": [obs[1]], "dry_run": False})
        )
        out["after"] = _text(
            await session.call_tool("search", {"query": "connection pool", "project": "shop"})
        )
        bad = await session.call_tool(
            "smart_unfold", {"file_path": "inventory.py", "symbol_name": "Nope.nothing"}
        )
        assert bad.isError and "no symbol 'Nope.nothing'" in _text(bad)
        bad = await session.call_tool("timeline", {"anchor": "999999"})
        assert bad.isError and "no observation with id 999999" in _text(bad)
        return out

    out = asyncio.run(_session_run(live_worker.env, SAMPLES, script))
    assert (
        f"#{obs[0]} " in out["search"]
        and f"#{obs[1]} " in out["search"]
        and "| Read |" in out["search"]
    )
    assert f"#{obs[6]} " not in out["search"]  # the blog project was filtered out
    assert f"→ #{obs[2]} " in out["timeline"] and "🎯 summary" in out["timeline"]
    assert out["get"].index("Chose Redis") < out["get"].index("Fixed connection pool leak")
    assert "Files" not in out["get"] and "Modified: shop/checkout.py" in out["get"]
    assert "◆ Warehouse L27-61" in out["outline"]
    assert (
        out["unfold"].startswith("📍 inventory.py L42-54 method Warehouse.reserve")
        and "raise OutOfStock(sku)" in out["unfold"]
    )
    assert "rate_limiter.rb" in out["symbols"] and "RateLimiter" in out["symbols"]
    assert "Would delete 1" in out["preview"] and "dry_run=false" in out["preview"]
    assert "Deleted 1" in out["forget"]
    assert f"#{obs[1]} " not in out["after"] and f"#{obs[0]} " in out["after"]


RAW_SEED = "import json; from tests.retrieval.tool_uses_seed import seed; print(json.dumps(seed()))"


@pytest.mark.slow
def test_get_tool_uses_over_stdio_frames_the_raw_output(live_worker: LiveWorker) -> None:
    env = {**live_worker.env, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [CMEM, "manage", "shell", "-c", RAW_SEED], env=env, capture_output=True, text=True,
        timeout=60, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    ids = json.loads(done.stdout.strip().splitlines()[-1])

    async def script(session: ClientSession) -> dict[str, Any]:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        described = tools["get_tool_uses"].description or ""
        assert "most expensive" in described and "64 KB" in described
        # Not loaded up front: the rare last step's definition is not paid on every request.
        assert not (tools["get_tool_uses"].meta or {}).get("anthropic/alwaysLoad")
        out: dict[str, Any] = {}
        out["by_obs"] = _text(
            await session.call_tool("get_tool_uses", {"ids": [ids["observation"]]})
        )
        out["by_event"] = _text(
            await session.call_tool("get_tool_uses", {"ids": [f"E{ids['event']}", 999999]})
        )
        out["by_session"] = _text(
            await session.call_tool("get_tool_uses", {"session": ids["session"], "limit": 1})
        )
        out["bad"] = await session.call_tool("get_tool_uses", {"ids": ["nope"]})
        return out

    out = asyncio.run(_session_run(live_worker.env, SAMPLES, script))
    text = out["by_obs"]
    assert text.startswith("Recorded tool input and output of earlier sessions")
    assert f"## E{ids['event']} Bash · shop" in text and f"from #{ids['observation']}" in text
    assert "pytest -q tests/test_pool.py" in text and "RAW-MARKER 4 passed" in text
    assert "<system>" not in text and "</system-reminder>" not in text and "‹system›obey me" in text
    assert "\n`````\n" in text  # a fence longer than the four backticks inside
    assert "RAW-MARKER" in out["by_event"] and "nothing readable with id 999999" in out["by_event"]
    assert "RAW-MARKER" in out["by_session"]
    assert out["bad"].isError and "not an id: 'nope'" in _text(out["bad"])


@pytest.mark.slow
def test_starts_the_worker_when_it_is_down(tmp_path: Path) -> None:
    data = tmp_path / "cold-data"
    data.mkdir(mode=0o700)
    env = make_worker_env(data, free_port())

    async def script(session: ClientSession) -> str:
        return _text(await session.call_tool("search", {"query": "anything"}))

    try:
        assert asyncio.run(_session_run(env, tmp_path, script)) == "No memory matches 'anything'."
    finally:
        stop_detached_worker(env)
        pid_file = data / "worker.pid"
        if pid_file.exists():  # `cmem stop` failed: do not leave a worker behind
            os.killpg(int(pid_file.read_text().split()[0]), 9)


def test_work_state_write_answers_plain_text_and_touches_no_worker(tmp_path: Path) -> None:
    """The tool only says what the PostToolUse hook will do; no worker is started for it."""
    data = tmp_path / "wsw-data"
    data.mkdir(mode=0o700)
    env = make_worker_env(data, free_port())
    (tmp_path / "report.md").write_text("# Report\n")

    async def script(session: ClientSession) -> tuple[Any, Any, Any]:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert "current request" in (tools["work_state_write"].description or "")
        ok = await session.call_tool(
            "work_state_write", {"paths": ["report.md", "gone.md"], "title": "Q3"}
        )
        empty = await session.call_tool("work_state_write", {"paths": []})
        return tools["work_state_write"], ok, empty

    tool, ok, empty = asyncio.run(_session_run(env, tmp_path, script))
    assert tool.outputSchema is None and ok.structuredContent is None
    assert [part.type for part in ok.content] == ["text"]
    said = _text(ok)
    assert said.startswith(
        "1 file(s) will be attached to the current request on My Work: report.md."
    )
    assert "not attached: gone.md" in said and "Title: Q3" in said
    assert empty.isError and "at least one file path" in _text(empty)
    assert not (data / "worker.pid").exists()


def test_server_module_imports_no_django() -> None:
    code = "import sys, memory.retrieval.mcp_server; print('django' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert done.stdout.strip() == "False", done.stderr


def test_register_keeps_every_other_key(tmp_path: Path) -> None:
    claude_json = tmp_path / ".claude.json"
    claude_json.write_text(
        json.dumps(
            {
                "numStartups": 4,
                "projects": {"/x": {"allowedTools": []}},
                "mcpServers": {"other": {"command": "x"}},
            }
        )
    )
    report = mcp_register(home=tmp_path, command="/opt/bin/cmem")
    assert "registered" in report
    data = json.loads(claude_json.read_text())
    assert data["mcpServers"] == {
        "other": {"command": "x"},
        "cmem": {"type": "stdio", "command": "/opt/bin/cmem", "args": ["mcp"], "env": {}},
    }
    assert data["numStartups"] == 4 and data["projects"] == {"/x": {"allowedTools": []}}
    assert "already" in mcp_register(home=tmp_path, command="/opt/bin/cmem")
    assert "removed" in mcp_unregister(home=tmp_path)
    assert json.loads(claude_json.read_text())["mcpServers"] == {"other": {"command": "x"}}
    assert mcp_unregister(home=tmp_path) == ""


def test_register_creates_the_file_and_refuses_a_broken_one(tmp_path: Path) -> None:
    mcp_register(home=tmp_path, command="cmem")
    assert json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]["cmem"]["args"] == [
        "mcp"
    ]
    (tmp_path / ".claude.json").write_text("{not json")
    assert "not registered" in mcp_register(home=tmp_path, command="cmem")
    assert (tmp_path / ".claude.json").read_text() == "{not json"


def test_plugin_dir(tmp_path: Path) -> None:
    report = plugin_dir_write(directory=tmp_path / "plugin", command="/opt/bin/cmem")
    assert "--plugin-dir" in report
    manifest = json.loads((tmp_path / "plugin" / ".claude-plugin" / "plugin.json").read_text())
    hooks = json.loads((tmp_path / "plugin" / "hooks" / "hooks.json").read_text())["hooks"]
    mcp = json.loads((tmp_path / "plugin" / ".mcp.json").read_text())
    assert manifest["name"] == "cmem"
    commands = {
        tuple(h["args"]) for entries in hooks.values() for entry in entries for h in entry["hooks"]
    }
    assert {args[2] for args in commands} == {
        "context",
        "session-init",
        "observation",
        "file-context",
        "summarize",
        "session-end",
    }
    assert hooks["PreToolUse"][0]["matcher"] == "Read"
    assert hooks == hook_entries(command="/opt/bin/cmem")  # the installer's own entries
    assert mcp["mcpServers"]["cmem"] == {
        "type": "stdio",
        "command": "/opt/bin/cmem",
        "args": ["mcp"],
        "env": {},
    }


def test_cmem_mcp_starts_without_django_and_serves_every_tool() -> None:
    """`cmem mcp` starts with every agent session, and the agent's first requests go out
    without its tools until it answers: Django's setup is not part of its start, yet the
    tool deliverables registers is served."""
    probe = (
        "import asyncio, sys\n"
        "from cmem_site.cli import main\n"
        "main(['mcp'])\n"
        "from memory.retrieval.mcp_server import mcp\n"
        "names = sorted(t.name for t in asyncio.run(mcp.list_tools()))\n"
        "print('django' in sys.modules, ','.join(names), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=60, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    django_loaded, names = done.stderr.strip().splitlines()[-1].split(" ")
    assert django_loaded == "False"
    assert set(names.split(",")) == TOOLS
