"""The Codex plugin in the repo (`.agents/plugins/marketplace.json`, `codex-plugin/`) as the
pinned real Codex CLI takes it: `codex plugin marketplace add <repo>`, `codex plugin add
cmem@cmem`, listed installed and enabled, its MCP server known to `codex mcp`, and a
`codex exec` (against a fake Responses API on 127.0.0.1) offering the model cmem's tools as
the namespace `mcp__cmem`, the name a `[mcp_servers.cmem]` gets too."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.codex.e2e.fake_responses_api import FakeResponsesAPI, say
from tests.codex.e2e.test_codex_e2e import codex_binary, offline_config, offline_env
from tests.support import CMEM, REPO

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

MARKER = "E2E-CX-PLUGIN"


def test_codex_takes_the_repos_plugin_and_offers_cmems_tools(tmp_path: Path) -> None:
    binary = codex_binary()
    home, project = tmp_path / "home", tmp_path / "project"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    project.mkdir()
    api = FakeResponsesAPI(scripts={MARKER: [say("ok")]}).start()
    (codex_home / "config.toml").write_text(offline_config(api.url))
    # The plugin's server is plain `cmem` on the PATH, as a user's would be.
    path = os.pathsep.join([str(Path(CMEM).parent), "/usr/bin", "/bin"])
    env = offline_env(path, home, codex_home, tmp_path / "data")

    def codex(*args: str) -> str:
        done = subprocess.run(
            [str(binary), *args], env=env, cwd=project, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=90,
        )  # fmt: skip
        assert done.returncode == 0, (args, done.stdout[-1500:], done.stderr[-1500:])
        return done.stdout

    try:
        assert "Added marketplace `cmem`" in codex("plugin", "marketplace", "add", str(REPO))
        assert "Added plugin `cmem`" in codex("plugin", "add", "cmem@cmem")
        installed = json.loads(codex("plugin", "list", "--json"))["installed"]
        assert [(p["pluginId"], p["installed"], p["enabled"]) for p in installed] == [
            ("cmem@cmem", True, True)
        ]
        # Codex took the Codex plugin, not the Claude Code one beside it (plugin/).
        assert installed[0]["source"]["path"] == str(REPO / "codex-plugin")
        server = json.loads(codex("mcp", "get", "cmem", "--json"))
        assert (server["transport"]["command"], server["transport"]["args"]) == ("cmem", ["mcp"])
        codex(
            "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
            f"{MARKER}: hello",
        )  # fmt: skip
    finally:
        api.stop()
    sent = api.requests_for(MARKER)
    assert sent, "codex exec never called the model"
    tools = {t["name"]: t for t in sent[0].body["tools"] if t.get("type") == "namespace"}
    names = [t["name"] for t in tools["mcp__cmem"]["tools"]]
    assert {"get_observations", "smart_outline", "search", "timeline"} <= set(names), names
