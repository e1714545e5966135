"""The whole loop with the real Factory Droid CLI (pinned in droid-version.txt), headless
(`droid exec`), offline against a fake OpenAI Chat Completions API on 127.0.0.1 (a BYOK
custom model, `provider: generic-chat-completion-api`, in ~/.factory/settings.json: no
Factory sign-in).

`cmem install --droid` writes the hooks into the scratch ~/.factory/settings.json next to
the user's custom model, and the MCP server into ~/.factory/mcp.json; the runs then prove:
session 1's Read is stored and compressed into an observation; session 2 starts with the
index, and its Read of the same file is refused by the gate (Droid allows refusing:
PreToolUse `permissionDecision: deny`), the refusal reaching the model as the tool's error.

The CLI is the platform package's binary (@factory/cli-linux-x64): the wrapper package's
own pin cannot be installed here (see docs/guide/agents/droid.md).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents.e2e.fake_model_apis import FakeChatAPI, call, say, tool_messages
from tests.agents.e2e.harness import INDEX, World, agent_world, pinned, stored_read, summary_queued
from tests.e2e.harness import installed_cli, query
from tests.support import REPO

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PINNED_VERSION = pinned("droid")
PACKAGE = "@factory/cli-linux-x64"
RUN1, RUN2 = "E2E-DR-ONE", "E2E-DR-TWO"


class SlowChatAPI(FakeChatAPI):
    """Answers after a pause: Droid starts MCP servers beside the first request, and a
    fake model that answers at once ends the run before cmem's server is connected."""

    def answer(self, path: str, body: dict) -> tuple[int, str, bytes]:
        time.sleep(1.5)
        return super().answer(path, body)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("droid-e2e")


@pytest.fixture(scope="module")
def api(root: Path) -> Iterator[FakeChatAPI]:
    target = str(root / "droid-shop" / "handlers.py")
    scripts = {
        RUN1: [call("Read", file_path=target), say("Read handlers.py.")],
        RUN2: [
            call("Read", file_path=target),
            # cmem's MCP tools are deferred: the model loads them by name through ToolSearch.
            call("ToolSearch", query="select:cmem___get_observations"),
            say("Used the timeline."),
        ],
    }
    with SlowChatAPI(scripts).serving(root / "requests.json") as fake:
        yield fake


@pytest.fixture(scope="module")
def world(root: Path, api: FakeChatAPI) -> Iterator[World]:
    explicit = os.environ.get("CMEM_DROID_BIN")
    binary = installed_cli(
        [Path(explicit) if explicit else None,
         REPO / ".e2e-node" / "node_modules" / PACKAGE / "bin" / "droid"],
        name="Factory Droid", package=f"{PACKAGE}@{PINNED_VERSION}",
    )  # fmt: skip
    # The user's own settings: a BYOK model and a hook of theirs, both kept by install.
    settings = {
        "customModels": [
            {"model": "gpt-fake", "displayName": "Fake", "baseUrl": f"{api.url}/v1",
             "apiKey": "sk-fake", "provider": "generic-chat-completion-api",
             "maxOutputTokens": 1000}
        ],
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]},
    }  # fmt: skip
    files = {".factory/settings.json": json.dumps(settings)}
    with agent_world(root, agent="droid", binary=binary, env={}, files=files) as world:
        yield world


def droid(world: World, marker: str, prompt: str) -> None:
    proc = world.run(
        marker, ["exec", "-m", "custom:Fake-0", "--auto", "low", f"{marker}: {prompt}"]
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode()[-3000:]


@pytest.fixture(scope="module")
def run1(world: World) -> World:
    droid(world, RUN1, "read handlers.py")
    assert world.wait_compressed(), "session 1's read was not compressed into an observation"
    return world


@pytest.fixture(scope="module")
def run2(run1: World) -> World:
    droid(run1, RUN2, "read handlers.py again")
    return run1


def test_install_writes_hooks_and_mcp_server_beside_the_users(world: World) -> None:
    factory = world.home / ".factory"
    settings = json.loads((factory / "settings.json").read_text())
    assert set(settings["hooks"]) == {
        "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd",
    }  # fmt: skip
    assert settings["hooks"]["Stop"][0]["hooks"][0]["command"] == "true"
    assert settings["customModels"][0]["model"] == "gpt-fake"
    servers = json.loads((factory / "mcp.json").read_text())
    assert servers["mcpServers"]["cmem"]["args"] == ["mcp"]


def test_run1_read_is_stored_as_a_read_of_the_file(run1: World) -> None:
    payload = stored_read(run1, platform="droid", project="droid-shop")
    assert payload["tool_input"]["file_path"].endswith("droid-shop/handlers.py")
    assert "handler_59" in json.dumps(payload["tool_response"])


def test_run1_stop_queues_a_summary(run1: World) -> None:
    assert summary_queued(run1), "Stop queued no summary"


def test_run2_starts_with_the_index(run2: World, api: FakeChatAPI) -> None:
    first = json.dumps(api.requests_for(RUN2)[0].body["messages"])
    assert INDEX in first
    assert "handlers.py" in first.split(INDEX, 1)[1]  # the index names session 1's file


def test_run2_read_is_refused_with_the_timeline(run2: World, api: FakeChatAPI) -> None:
    result = tool_messages(api.requests_for(RUN2)[1].body)
    assert "Read blocked" in result, result[:2000]
    assert "'handler': 59" not in result  # the file's body was not read (its outline may be)
    kinds = [r["kind"] for r in query(run2.worker, "SELECT kind FROM memory_ledgerentry")]
    assert any("deny" in str(k) for k in kinds), kinds


def test_droid_serves_cmems_mcp_tools_under_the_names_the_gate_uses(
    run2: World, api: FakeChatAPI
) -> None:
    # Droid defers MCP tools (not in `tools`); ToolSearch loads one by the name the model
    # knows it under, <server>___<tool>, the name the refusal gives.
    assert "cmem___get_observations(" in tool_messages(api.requests_for(RUN2)[1].body)
    after_search = api.requests_for(RUN2)[2].body
    print(f"ToolSearch result: {tool_messages(after_search)[-1500:]}")
    names = {(t.get("function") or {}).get("name") for t in after_search.get("tools", [])}
    assert "cmem___get_observations" in names, sorted(n for n in names if n)


def test_e2e_wall_time(run2: World) -> None:
    assert all(s < 90 for s in run2.seconds.values()), run2.seconds
    print(f"droid runs: {run2.seconds}")
