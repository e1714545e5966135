"""Issue 15 §7: smart_outline / smart_unfold / smart_search read only files under known
project roots (recorded roots, plus the MCP server's cwd), over HTTP and MCP alike."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.factories import SessionFactory
from tests.support import CMEM, LiveWorker

SOURCE = "def visible():\n    return 1\n"


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "ok.py").write_text(SOURCE)
    stranger = tmp_path / "unrecorded"
    stranger.mkdir()
    (stranger / "other.py").write_text("def stranger_secret():\n    return 2\n")
    return {"project": project, "stranger": stranger}


@pytest.mark.django_db
def test_http_refuses_absolute_paths_outside_recorded_roots(
    client: Client, tree: dict[str, Path], data_dir: Path
) -> None:
    SessionFactory(root=tree["project"], project="proj")
    (data_dir / "x.py").write_text(SOURCE)
    ok = client.get("/api/outline", {"path": str(tree["project"] / "ok.py")})
    assert ok.status_code == 200, ok.content
    other = str(tree["stranger"] / "other.py")
    for url, params in [
        ("/api/outline", {"path": other}),
        ("/api/outline", {"path": "/etc/passwd"}),
        ("/api/outline", {"path": str(tree["project"] / ".." / "unrecorded" / "other.py")}),
        ("/api/outline", {"path": "other.py", "root": str(tree["stranger"])}),  # root not known
        ("/api/outline", {"path": str(data_dir / "x.py")}),
        ("/api/outline/unfold", {"path": other, "symbol": "stranger_secret"}),
        ("/api/outline/search", {"q": "stranger", "root": str(tree["stranger"])}),
        ("/api/outline/search", {"q": "x", "root": str(data_dir)}),
    ]:
        resp = client.get(url, params)
        assert resp.status_code == 403, (url, params, resp.content)
        assert b"stranger_secret" not in resp.content


def _text(result: Any) -> str:
    return "\n".join(part.text for part in result.content if part.type == "text")


@pytest.mark.slow
def test_mcp_reads_its_cwd_and_refuses_everything_else(
    live_worker: LiveWorker, tree: dict[str, Path]
) -> None:
    secret_dir = live_worker.data_dir / "logs"
    shutil.copy(tree["project"] / "ok.py", secret_dir / "inside_data.py")

    async def script(session: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["ok"] = await session.call_tool("smart_outline", {"file_path": "ok.py"})
        for name, args in {
            "dotdot": ("smart_outline", {"file_path": "../unrecorded/other.py"}),
            "absolute": ("smart_outline", {"file_path": str(tree["stranger"] / "other.py")}),
            "etc": ("smart_outline", {"file_path": "/etc/passwd"}),
            "data": ("smart_outline", {"file_path": str(secret_dir / "inside_data.py")}),
            "unfold": (
                "smart_unfold",
                {"file_path": "../unrecorded/other.py", "symbol_name": "stranger_secret"},
            ),
            "search": ("smart_search", {"query": "stranger", "path": str(tree["stranger"])}),
        }.items():
            out[name] = await session.call_tool(args[0], args[1])
        return out

    params = StdioServerParameters(
        command=CMEM, args=["mcp"], env=live_worker.env, cwd=str(tree["project"])
    )

    async def run() -> dict[str, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await script(session)

    out = asyncio.run(run())
    assert not out.pop("ok").isError
    for name, result in out.items():
        assert result.isError, name
        assert "stranger_secret" not in _text(result), name
        assert "outside every known project root" in _text(result) or "data directory" in _text(
            result
        ), (name, _text(result))
