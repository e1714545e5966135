"""The whole loop with the real Qwen Code CLI (pinned in qwen-code-version.txt), headless
(`qwen -p`), offline against a fake OpenAI Chat Completions API on 127.0.0.1 (Qwen's
`openai` auth: OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL).

`cmem install --qwen` writes the hooks and the MCP server into a scratch ~/.qwen/settings.json
next to the user's own settings; the runs then prove: session 1's read_file is stored and
compressed into an observation; session 2's first request carries the index, and its
read_file of the same file is refused by the gate (Qwen allows refusing: PreToolUse
`permissionDecision: deny`), the refusal reaching the model as the tool's error with cmem's
tools named as Qwen lists them (`mcp__cmem__…`).
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

PINNED_VERSION = pinned("qwen-code")
RUN1, RUN2 = "E2E-QW-ONE", "E2E-QW-TWO"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("qwen-e2e")


@pytest.fixture(scope="module")
def api(root: Path) -> Iterator[FakeChatAPI]:
    # Qwen's read_file refuses a relative path ("File path must be absolute").
    target = str(root / "qwen-shop" / "handlers.py")
    scripts = {
        RUN1: [call("read_file", file_path=target), say("Read handlers.py.")],
        RUN2: [call("read_file", file_path=target), say("Used the timeline.")],
    }
    with FakeChatAPI(scripts).serving(root / "requests.json") as fake:
        yield fake


@pytest.fixture(scope="module")
def world(root: Path, api: FakeChatAPI) -> Iterator[World]:
    binary = agent_binary(
        "qwen", env_var="CMEM_QWEN_BIN", name="Qwen Code",
        package=f"@qwen-code/qwen-code@{PINNED_VERSION}",
    )  # fmt: skip
    env = {
        "OPENAI_API_KEY": "sk-fake",
        "OPENAI_BASE_URL": f"{api.url}/v1",
        "OPENAI_MODEL": "gpt-fake",
        "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1",
    }
    # The user's own settings: an OpenAI-compatible login and a hook of theirs, both kept.
    settings = {
        "security": {"auth": {"selectedType": "openai"}},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true", "name": "mine"}]}]},
    }
    files = {".qwen/settings.json": json.dumps(settings)}
    with agent_world(root, agent="qwen", binary=binary, env=env, files=files) as world:
        yield world


def qwen(world: World, marker: str, prompt: str) -> None:
    proc = world.run(marker, ["-p", f"{marker}: {prompt}", "--yolo", "-o", "json"])
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode()[-3000:]


@pytest.fixture(scope="module")
def run1(world: World) -> World:
    qwen(world, RUN1, "read handlers.py")
    assert world.wait_compressed(), "session 1's read was not compressed into an observation"
    return world


@pytest.fixture(scope="module")
def run2(run1: World) -> World:
    qwen(run1, RUN2, "read handlers.py again")
    return run1


def test_install_writes_hooks_and_mcp_server_beside_the_users(world: World) -> None:
    settings = json.loads((world.home / ".qwen" / "settings.json").read_text())
    assert set(settings["hooks"]) == {
        "SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure",
        "Stop", "SessionEnd",
    }  # fmt: skip
    assert settings["hooks"]["Stop"][0]["hooks"][0]["name"] == "mine"
    assert settings["security"] == {"auth": {"selectedType": "openai"}}
    assert settings["mcpServers"]["cmem"]["args"] == ["mcp"]
    assert "hooks installed" in world.install_out


def test_run1_read_is_stored_as_a_read_of_the_file(run1: World) -> None:
    payload = stored_read(run1, platform="qwen", project="qwen-shop")
    assert payload["tool_input"]["file_path"].endswith("qwen-shop/handlers.py")
    assert "handler_59" in payload["tool_response"]
    # Qwen fires UserPromptSubmit again, empty, with the tool results: one prompt stored.
    prompts = query(run1.worker, "SELECT text FROM memory_prompt")
    assert [RUN1 in p["text"] for p in prompts] == [True]


def test_run1_stop_queues_a_summary(run1: World) -> None:
    assert summary_queued(run1), "Stop queued no summary"


def test_run2_starts_with_the_index(run2: World, api: FakeChatAPI) -> None:
    first = json.dumps(api.requests_for(RUN2)[0].body["messages"])
    assert INDEX in first
    assert "handlers.py" in first.split(INDEX, 1)[1]  # the index names session 1's file
    assert "No memory of this project yet" in json.dumps(api.requests_for(RUN1)[0].body["messages"])


def test_run2_read_is_refused_with_the_timeline(run2: World, api: FakeChatAPI) -> None:
    result = tool_messages(api.requests_for(RUN2)[1].body)
    assert "Read blocked" in result, result[:2000]
    assert "mcp__cmem__get_observations(" in result
    assert "Call read_file again" in result
    assert "'handler': 59" not in result  # the file's body was not read (its outline may be)
    kinds = [r["kind"] for r in query(run2.worker, "SELECT kind FROM memory_ledgerentry")]
    assert any("deny" in str(k) for k in kinds), kinds


def test_qwen_lists_cmems_mcp_tools_under_the_names_the_gate_uses(
    run2: World, api: FakeChatAPI
) -> None:
    # Qwen defers MCP tools: not in `tools`, but named in a system reminder and reached
    # through its tool_search / tool_call bridge.
    body = api.requests_for(RUN2)[0].body
    names = {(t.get("function") or {}).get("name") for t in body.get("tools", [])}
    assert {"tool_search", "tool_call"} <= names, sorted(names)
    listed = json.dumps(body["messages"])
    assert "#### cmem" in listed
    assert '\\"mcp__cmem__get_observations\\"' in listed
    assert '\\"mcp__cmem__smart_outline\\"' in listed


def test_e2e_wall_time(run2: World) -> None:
    assert all(s < 90 for s in run2.seconds.values()), run2.seconds
    print(f"qwen runs: {run2.seconds}")
