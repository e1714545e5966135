"""Continue CLI (pinned in continue-cli-version.txt) captured through its session files:
the real `cn -p … --auto`, offline against a fake Chat Completions API on 127.0.0.1, with
the user's own ~/.continue/config.yaml (a local model and a rule of theirs).

`cn` fires no hooks, so `cmem install --continue` turns on `cmem watch` and registers cmem's
MCP server in that config.yaml. The runs prove: session 1's prompt (its `<private>` part
stripped), its Read and its end are read from ~/.continue/sessions/<id>.json by `cmem watch
--once` and stored through the hook API as platform `continue`; the Read is compressed into
an observation of handlers.py; a second `--once` delivers nothing again; session 2's model
calls cmem's MCP tools `search` and `get_observations` through the real `cn` (which starts
`cmem mcp` from the registered entry) and gets session 1's observation back.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents.e2e.fake_model_apis import FakeChatAPI, call, say
from tests.agents.e2e.harness import World, agent_binary, agent_world, pinned
from tests.e2e.harness import query
from tests.support import CMEM

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PINNED_VERSION = pinned("continue-cli")
RUN1, RUN2 = "E2E-CN-ONE", "E2E-CN-TWO"
SECRET = "my-hidden-passphrase-42"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("continue-e2e")


@pytest.fixture(scope="module")
def api(root: Path) -> Iterator[FakeChatAPI]:
    scripts = {
        RUN1: [call("Read", filepath="handlers.py"), say("Read handlers.py.")],
        RUN2: [],  # written once session 1's observation exists (its id goes in)
    }
    with FakeChatAPI(scripts).serving(root / "requests.json") as fake:
        yield fake


def user_config(api: FakeChatAPI) -> str:
    return (
        "name: my setup\nversion: 1.0.0\nschema: v1\n"
        "# my local model\n"
        "models:\n"
        "  - name: fake\n    provider: openai\n    model: gpt-fake\n"
        f"    apiBase: {api.url}/v1\n    apiKey: sk-fake\n    roles: [chat]\n"
        "rules:\n  - Answer briefly.\n"
    )


@pytest.fixture(scope="module")
def world(root: Path, api: FakeChatAPI) -> Iterator[World]:
    binary = agent_binary(
        "cn", env_var="CMEM_CONTINUE_BIN", name="Continue CLI",
        package=f"@continuedev/cli@{PINNED_VERSION}",
    )  # fmt: skip
    files = {".continue/config.yaml": user_config(api)}
    # The worker's own watcher is off here (CLAUDE_MEM_WATCH empty in its environment wins
    # over the settings file): `cmem watch --once` delivers, so the counts are its own.
    # tests/watch/test_watch_worker.py proves the worker's watcher.
    with agent_world(
        root, agent="continue", binary=binary, env={}, files=files,
        worker_extra={"CLAUDE_MEM_WATCH": ""},
    ) as world:  # fmt: skip
        yield world


def cn(world: World, marker: str, prompt: str) -> None:
    proc = world.run(marker, ["-p", f"{marker}: {prompt}", "--auto"])
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode()[-3000:]


def watch_once(world: World) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [CMEM, "watch", "--once"], env=world.env, cwd=world.project,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def counts(world: World) -> dict[str, int]:
    return {
        table: query(world.worker, f"SELECT count(*) AS n FROM memory_{table}")[0]["n"]
        for table in ("session", "prompt", "event", "observation")
    }


@pytest.fixture(scope="module")
def run1(world: World) -> World:
    cn(world, RUN1, f"read handlers.py <private>{SECRET}</private>")
    world.runs["watch1"] = watch_once(world)  # type: ignore[assignment]
    assert world.wait_compressed(), "session 1's Read was not compressed into an observation"
    return world


@pytest.fixture(scope="module")
def run2(run1: World, api: FakeChatAPI) -> World:
    observation = run1.observations_of_target()[0]["id"]  # type: ignore[index]
    api.scripts[RUN2] = [
        call("search", query="handlers", limit=5),
        call("get_observations", ids=[observation]),
        say("Recalled."),
    ]
    cn(run1, RUN2, "what do you remember about handlers.py?")
    return run1


def test_install_turns_watching_on_and_registers_mcp_beside_the_users(world: World) -> None:
    config = (world.home / ".continue" / "config.yaml").read_text()
    assert "Answer briefly." in config and "name: cmem" in config and "apiBase" in config
    assert list((world.home / ".continue").glob("config.yaml.bak.*"))
    settings = json.loads((world.worker.data_dir / "settings.json").read_text())
    assert settings["CLAUDE_MEM_WATCH"] == "continue"
    assert "watching Continue's sessions" in world.install_out


def test_session1_is_captured_from_its_file(run1: World) -> None:
    files = list((run1.home / ".continue" / "sessions").glob("*.json"))
    assert len([p for p in files if p.name != "sessions.json"]) == 1
    sessions = query(run1.worker, "SELECT platform, project, session_id FROM memory_session")
    assert [(s["platform"], s["project"]) for s in sessions] == [("continue", "continue-shop")]
    prompts = [p["text"] for p in query(run1.worker, "SELECT text FROM memory_prompt")]
    assert len(prompts) == 1 and RUN1 in prompts[0]
    assert SECRET not in prompts[0]  # <private> stripped, as for a hook's prompt
    events = query(run1.worker, "SELECT kind, tool_name, payload FROM memory_event ORDER BY id")
    assert [(e["kind"], e["tool_name"]) for e in events] == [
        ("observation", "Read"), ("summary", ""),
    ]  # fmt: skip
    payload = json.loads(events[0]["payload"])
    assert payload["tool_input"] == {"file_path": "handlers.py"}
    assert "handler_59" in payload["tool_response"]
    assert [(f["path"], f["role"]) for f in payload["cmem_files"]] == [("handlers.py", "read")]
    assert "continue: 3 events from 3 new items in 1 session files" in run1.runs["watch1"].stdout  # type: ignore[attr-defined]


def test_a_second_pass_delivers_nothing_again(run1: World) -> None:
    before = counts(run1)
    again = watch_once(run1)
    assert "continue: 0 events" in again.stdout
    assert counts(run1) == before
    doctor = subprocess.run(
        [CMEM, "doctor"], env=run1.env, capture_output=True, text=True, timeout=120
    )
    assert "Continue CLI sessions watched" in doctor.stdout, doctor.stdout
    assert "1 of 1 session files read" in doctor.stdout


def test_session2_recalls_session1_through_cmems_mcp_tools(run2: World, api: FakeChatAPI) -> None:
    requests = api.requests_for(RUN2)
    names = {t["function"]["name"] for t in requests[0].body.get("tools", [])}
    assert {"search", "get_observations"} <= names, sorted(names)
    results = [
        json.dumps([m for m in r.body["messages"] if m.get("role") == "tool"]) for r in requests
    ]
    observation = run2.observations_of_target()[0]["id"]  # type: ignore[index]
    assert f"#{observation}" in results[1], results[1][:2000]  # search found it
    title = query(run2.worker, f"SELECT title FROM memory_observation WHERE id = {observation}")
    assert title[0]["title"][:30] in results[2].replace("\\", ""), results[2][:2000]


def test_e2e_wall_time(run2: World) -> None:
    assert all(s < 90 for s in run2.seconds.values()), run2.seconds
    print(f"continue runs: {run2.seconds}")
