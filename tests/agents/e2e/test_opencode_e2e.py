"""The whole loop with the real OpenCode CLI (pinned in opencode-version.txt), headless
(`opencode run`), against a fake OpenAI Chat Completions endpoint on 127.0.0.1 configured
as an `@ai-sdk/openai-compatible` provider in the scratch ~/.config/opencode/opencode.json.

`cmem install --opencode` writes cmem's plugin (plugin/cmem.js) and the MCP server
(`mcp.cmem` in opencode.json, the user's provider kept); the runs then prove: session 1's
`read` is stored and compressed into an observation; session 2's system prompt carries the
index, and its `read` of the same file is refused by the gate (the plugin throws in
tool.execute.before, which OpenCode hands the model as the tool's error).
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

PINNED_VERSION = pinned("opencode")
RUN1, RUN2 = "E2E-OC-ONE", "E2E-OC-TWO"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("opencode-e2e")


@pytest.fixture(scope="module")
def api(root: Path) -> Iterator[FakeChatAPI]:
    target = str(root / "opencode-shop" / "handlers.py")
    scripts = {
        RUN1: [call("read", filePath=target), say("Read handlers.py.")],
        RUN2: [call("read", filePath=target), say("Used the timeline.")],
    }
    with FakeChatAPI(scripts).serving(root / "requests.json") as fake:
        yield fake


@pytest.fixture(scope="module")
def world(root: Path, api: FakeChatAPI) -> Iterator[World]:
    binary = agent_binary(
        "opencode", env_var="CMEM_OPENCODE_BIN", name="OpenCode",
        package=f"opencode-ai@{PINNED_VERSION}",
    )  # fmt: skip
    config = {
        "$schema": "https://opencode.ai/config.json",
        "model": "fake/gpt-fake",
        "autoupdate": False,
        "share": "disabled",
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake",
                "options": {"baseURL": f"{api.url}/v1", "apiKey": "sk-fake"},
                "models": {"gpt-fake": {"name": "gpt-fake", "tool_call": True}},
            }
        },
    }
    env = {
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "OPENCODE_DISABLE_CLAUDE_CODE": "1",
        # OpenCode npm-installs @opencode-ai/plugin into its config folder before the first
        # session; offline that fails only after ~70 s of retries, from the cache at once.
        "npm_config_offline": "true",
        "npm_config_fetch_retries": "0",
    }
    files = {".config/opencode/opencode.json": json.dumps(config)}
    with agent_world(root, agent="opencode", binary=binary, env=env, files=files) as world:
        yield world


def opencode(world: World, marker: str, prompt: str) -> None:
    proc = world.run(marker, ["run", f"{marker}: {prompt}"], timeout=180)
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode()[-3000:]


@pytest.fixture(scope="module")
def run1(world: World) -> World:
    opencode(world, RUN1, "read handlers.py")
    assert world.wait_compressed(), "session 1's read was not compressed into an observation"
    return world


@pytest.fixture(scope="module")
def run2(run1: World) -> World:
    opencode(run1, RUN2, "read handlers.py again")
    return run1


def test_install_writes_the_plugin_and_keeps_the_users_config(world: World) -> None:
    home = world.home / ".config" / "opencode"
    assert "hook" in (home / "plugin" / "cmem.js").read_text()
    config = json.loads((home / "opencode.json").read_text())
    assert config["mcp"]["cmem"]["command"][-1] == "mcp"
    assert config["provider"]["fake"]["npm"] == "@ai-sdk/openai-compatible"


def test_run1_read_is_stored_as_a_read_of_the_file(run1: World) -> None:
    payload = stored_read(run1, platform="opencode", project="opencode-shop")
    assert payload["tool_input"]["file_path"].endswith("opencode-shop/handlers.py")
    assert "handler_59" in payload["tool_response"]
    prompts = query(run1.worker, "SELECT text FROM memory_prompt")
    assert [RUN1 in p["text"] for p in prompts] == [True]


def test_run1_idle_queues_a_summary(run1: World) -> None:
    assert summary_queued(run1), "session.idle queued no summary"


def test_run2_system_prompt_carries_the_index(run2: World, api: FakeChatAPI) -> None:
    first = api.requests_for(RUN2)[0].body["messages"]
    system = json.dumps([m for m in first if m.get("role") == "system"])
    assert INDEX in system
    assert "handlers.py" in system.split(INDEX, 1)[1]


def test_run2_read_is_refused_with_the_timeline(run2: World, api: FakeChatAPI) -> None:
    result = tool_messages(api.requests_for(RUN2)[1].body)
    assert "Read blocked" in result, result[:2000]
    assert "Call read again" in result
    assert "cmem_get_observations(" in result
    assert "'handler': 59" not in result  # the file's body was not read (its outline may be)
    kinds = [r["kind"] for r in query(run2.worker, "SELECT kind FROM memory_ledgerentry")]
    assert any("deny" in str(k) for k in kinds), kinds


def test_opencode_lists_cmems_mcp_tools_under_the_names_the_gate_uses(
    run2: World, api: FakeChatAPI
) -> None:
    tools = api.requests_for(RUN2)[0].body.get("tools", [])
    names = {(t.get("function") or {}).get("name") for t in tools}
    assert "cmem_get_observations" in names, sorted(n for n in names if n)


def test_e2e_wall_time(run2: World) -> None:
    assert all(s < 120 for s in run2.seconds.values()), run2.seconds
    print(f"opencode runs: {run2.seconds}")
