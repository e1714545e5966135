"""The whole loop with the real GitHub Copilot CLI (pinned in copilot-cli-version.txt),
headless (`copilot -p`), offline (COPILOT_OFFLINE=true, no GitHub sign-in) against a fake
OpenAI Chat Completions provider on 127.0.0.1 (Copilot's BYOK: COPILOT_PROVIDER_BASE_URL).

`cmem install --copilot` writes ~/.copilot/hooks/cmem.json and the MCP server into
~/.copilot/mcp-config.json; the runs then prove: session 1's `view` is stored and
compressed into an observation; session 2 starts with the index, and its `view` of the
same file is refused by the gate (Copilot allows refusing: preToolUse `permissionDecision:
deny`), the refusal reaching the model with cmem's tools named as Copilot lists them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents.e2e.fake_model_apis import FakeChatAPI, call, say, tool_messages
from tests.agents.e2e.harness import (
    INDEX,
    World,
    agent_binary,
    agent_world,
    pinned,
    stored_read,
    summary_queued,
)
from tests.e2e.harness import query

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PINNED_VERSION = pinned("copilot-cli")
RUN1, RUN2 = "E2E-CP-ONE", "E2E-CP-TWO"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("copilot-e2e")


@pytest.fixture(scope="module")
def api(root: Path) -> Iterator[FakeChatAPI]:
    target = str(root / "copilot-shop" / "handlers.py")  # Copilot's view takes absolute paths
    scripts = {
        RUN1: [call("view", path=target), say("Read handlers.py.")],
        RUN2: [call("view", path=target), say("Used the timeline.")],
    }
    with FakeChatAPI(scripts).serving(root / "requests.json") as fake:
        yield fake


@pytest.fixture(scope="module")
def world(root: Path, api: FakeChatAPI) -> Iterator[World]:
    binary = agent_binary(
        "copilot", env_var="CMEM_COPILOT_BIN", name="GitHub Copilot CLI",
        package=f"@github/copilot@{PINNED_VERSION}",
    )  # fmt: skip
    env = {
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": f"{api.url}/v1",
        "COPILOT_PROVIDER_API_KEY": "sk-fake",
        "COPILOT_MODEL": "gpt-fake",
    }
    # A hook file of the user's own: install must leave it alone.
    mine = {"version": 1, "hooks": {"sessionEnd": [{"type": "command", "bash": "true"}]}}
    files = {".copilot/hooks/mine.json": json.dumps(mine)}
    with agent_world(root, agent="copilot", binary=binary, env=env, files=files) as world:
        yield world


def copilot(world: World, marker: str, prompt: str) -> None:
    proc = world.run(marker, ["-p", f"{marker}: {prompt}", "--allow-all-tools", "--no-color"])
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode()[-3000:]


@pytest.fixture(scope="module")
def run1(world: World) -> World:
    copilot(world, RUN1, "read handlers.py")
    assert world.wait_compressed(), "session 1's read was not compressed into an observation"
    return world


@pytest.fixture(scope="module")
def run2(run1: World) -> World:
    copilot(run1, RUN2, "read handlers.py again")
    return run1


def test_install_writes_its_own_hook_file_and_the_mcp_server(world: World) -> None:
    hooks = json.loads((world.home / ".copilot" / "hooks" / "cmem.json").read_text())
    assert hooks["version"] == 1
    assert set(hooks["hooks"]) >= {"sessionStart", "preToolUse", "postToolUse", "agentStop"}
    mine = json.loads((world.home / ".copilot" / "hooks" / "mine.json").read_text())
    assert mine["hooks"]["sessionEnd"][0]["bash"] == "true"
    servers = json.loads((world.home / ".copilot" / "mcp-config.json").read_text())
    assert servers["mcpServers"]["cmem"]["args"] == ["mcp"]


def test_run1_view_is_stored_as_a_read_of_the_file(run1: World) -> None:
    payload = stored_read(run1, platform="copilot", project="copilot-shop")
    assert payload["tool_input"]["file_path"].endswith("copilot-shop/handlers.py")
    assert "handler_59" in payload["tool_response"]
    prompts = query(run1.worker, "SELECT text FROM memory_prompt")
    assert [RUN1 in p["text"] for p in prompts] == [True]


def test_run1_agent_stop_queues_a_summary(run1: World) -> None:
    assert summary_queued(run1), "agentStop queued no summary"


def test_run2_starts_with_the_index(run2: World, api: FakeChatAPI) -> None:
    first = json.dumps(api.requests_for(RUN2)[0].body["messages"])
    assert INDEX in first
    assert "No memory of this project yet" in json.dumps(api.requests_for(RUN1)[0].body["messages"])


def test_run2_view_is_refused_with_the_timeline(run2: World, api: FakeChatAPI) -> None:
    result = tool_messages(api.requests_for(RUN2)[1].body)
    assert "Read blocked" in result, result[:2000]
    assert "Call view again" in result
    assert "'handler': 59" not in result  # the file's body was not read (its outline may be)
    kinds = [r["kind"] for r in query(run2.worker, "SELECT kind FROM memory_ledgerentry")]
    assert any("deny" in str(k) for k in kinds), kinds


def test_copilot_lists_cmems_mcp_tools_under_the_names_the_gate_uses(
    run2: World, api: FakeChatAPI
) -> None:
    tools = api.requests_for(RUN2)[0].body.get("tools", [])
    names = {(t.get("function") or t.get("custom") or {}).get("name") for t in tools}
    assert "cmem-get_observations" in names, sorted(names)
    result = tool_messages(api.requests_for(RUN2)[1].body)
    assert "cmem-get_observations(" in result


def test_e2e_wall_time(run2: World) -> None:
    assert all(s < 90 for s in run2.seconds.values()), run2.seconds
    print(f"copilot runs: {run2.seconds}")
