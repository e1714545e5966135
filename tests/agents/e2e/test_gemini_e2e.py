"""The whole loop with the real Gemini CLI (pinned in gemini-cli-version.txt) and a fake
Gemini API on 127.0.0.1 (GOOGLE_GEMINI_BASE_URL), headless (`gemini -p`).

`cmem install --gemini` writes the hooks and the MCP server into a scratch ~/.gemini; the
runs then prove: session 1's read_file is stored and compressed into an observation;
session 2's prompt carries the index, its read_file of the same file is refused by the
gate (Gemini allows refusing: BeforeTool `decision: deny`), the refusal reaches the model as
the tool's error and names cmem's tools as Gemini lists them (`mcp_cmem_…`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.agents.e2e.fake_model_apis import FakeGeminiAPI, call, say
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

PINNED_VERSION = pinned("gemini-cli")
RUN1, RUN2 = "E2E-GM-ONE", "E2E-GM-TWO"
MODEL = "gemini-2.5-flash"


@pytest.fixture(scope="module")
def api() -> Iterator[FakeGeminiAPI]:
    scripts = {
        RUN1: [call("read_file", file_path="handlers.py"), say("Read handlers.py.")],
        RUN2: [call("read_file", file_path="handlers.py"), say("Used the timeline.")],
    }
    with FakeGeminiAPI(scripts).serving() as fake:
        yield fake


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, api: FakeGeminiAPI) -> Iterator[World]:
    binary = agent_binary(
        "gemini", env_var="CMEM_GEMINI_BIN", name="Gemini CLI",
        package=f"@google/gemini-cli@{PINNED_VERSION}",
    )  # fmt: skip
    env = {
        "GEMINI_API_KEY": "fake-key",
        "GOOGLE_GEMINI_BASE_URL": api.url,
        # Headless runs refuse an untrusted folder; this is the documented switch.
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }
    root = tmp_path_factory.mktemp("gemini-e2e")
    # The user's own settings: an API-key login and a hook of theirs, both kept by install.
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "hooks": {
            "AfterTool": [{"hooks": [{"type": "command", "command": "true", "name": "mine"}]}]
        },
    }
    files = {".gemini/settings.json": json.dumps(settings)}
    with agent_world(root, agent="gemini", binary=binary, env=env, files=files) as world:
        yield world
    (root / "requests.json").write_text(json.dumps([r.body for r in api.requests], indent=1))


def gemini(world: World, marker: str, prompt: str) -> None:
    proc = world.run(marker, ["-p", f"{marker}: {prompt}", "--yolo", "-m", MODEL, "-o", "json"])
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode()[-3000:]


@pytest.fixture(scope="module")
def run1(world: World) -> World:
    gemini(world, RUN1, "read handlers.py")
    assert world.wait_compressed(), "session 1's read was not compressed into an observation"
    return world


@pytest.fixture(scope="module")
def run2(run1: World) -> World:
    gemini(run1, RUN2, "read handlers.py again")
    return run1


def function_responses(body: dict) -> list[dict]:
    return [
        p["functionResponse"]
        for c in body.get("contents", [])
        for p in c.get("parts", [])
        if "functionResponse" in p
    ]


def test_install_writes_hooks_and_mcp_server(world: World) -> None:
    settings = json.loads((world.home / ".gemini" / "settings.json").read_text())
    assert set(settings["hooks"]) == {
        "SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "SessionEnd",
    }  # fmt: skip
    assert settings["mcpServers"]["cmem"]["args"] == ["mcp"]
    assert settings["security"] == {"auth": {"selectedType": "gemini-api-key"}}
    assert settings["hooks"]["AfterTool"][0]["hooks"][0]["name"] == "mine"
    assert "hooks installed" in world.install_out


def test_run1_read_is_stored_as_a_read_of_the_file(run1: World) -> None:
    payload = stored_read(run1, platform="gemini", project="gemini-shop")
    assert payload["tool_input"] == {"file_path": "handlers.py"}
    assert "handler_59" in payload["tool_response"]
    prompts = query(run1.worker, "SELECT text FROM memory_prompt")
    assert [RUN1 in p["text"] for p in prompts] == [True]


def test_run1_stop_queues_a_summary(run1: World) -> None:
    assert summary_queued(run1), "AfterAgent queued no summary"


def test_run2_prompt_carries_the_index(run2: World, api: FakeGeminiAPI) -> None:
    # Headless Gemini prepends SessionStart's additionalContext to the prompt.
    prompt = json.dumps(
        [c for c in api.requests_for(RUN2)[0].body["contents"] if c["role"] == "user"]
    )
    assert INDEX in prompt
    assert "handlers.py" in prompt.split(INDEX, 1)[1]  # the index names session 1's file
    first = json.dumps(
        [c for c in api.requests_for(RUN1)[0].body["contents"] if c["role"] == "user"]
    )
    assert "No memory of this project yet" in first  # nothing to index before session 1


def test_run2_read_is_refused_with_the_timeline(run2: World, api: FakeGeminiAPI) -> None:
    after_read = api.requests_for(RUN2)[1]
    responses = json.dumps(function_responses(after_read.body))
    assert "Read blocked" in responses, responses[:2000]
    assert "mcp_cmem_get_observations(" in responses
    assert "Call read_file again" in responses
    assert "'handler': 59" not in responses  # the file's body was not read (its outline may be)
    denied = query(run2.worker, "SELECT kind FROM memory_ledgerentry")
    assert any("deny" in str(d["kind"]) for d in denied), [d["kind"] for d in denied]


def test_gemini_lists_cmems_mcp_tools_under_the_names_the_gate_uses(
    run2: World, api: FakeGeminiAPI
) -> None:
    declared = {
        f["name"]
        for t in api.requests_for(RUN2)[0].body.get("tools", [])
        for f in t.get("functionDeclarations", [])
    }
    assert {"mcp_cmem_get_observations", "mcp_cmem_smart_outline"} <= declared, sorted(declared)


def test_e2e_wall_time(run2: World) -> None:
    # Recorded for the docs' CI-time figure; a hang would show here first.
    assert all(s < 90 for s in run2.seconds.values()), run2.seconds
    print(f"gemini runs: {run2.seconds}")
