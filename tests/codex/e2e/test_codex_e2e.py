"""The whole loop with the real Codex CLI (pinned in codex-version.txt) and a fake
Responses API on 127.0.0.1.

`cmem install --codex` writes the hooks into a scratch `$CODEX_HOME` and trusts them through
`codex app-server`; the runs then go without `--dangerously-bypass-hook-trust`, so they
also prove the trust was recorded. Two `codex exec` runs share one worker and one project:
1. (gpt-5.5, which has apply_patch) a shell read of handlers.py, an apply_patch of it and a
   forced auto compaction (`model_auto_compact_token_limit`): both tool uses are stored,
   and the SessionStart index is a developer message at the start and again right after
   the compaction;
2. (gpt-fake, which has the multi-agent tools) the same shell read gets the file's
   timeline as context; a spawned sub-agent's first request carries the index, and after
   its own compaction its next tool use brings the index back (PostCompact's mark); a
   forked one gets none (it holds its parent's history);
3. (gpt-fake, the shell-read gate switched to `deny` in settings.json) the same shell read is
   refused, the refusal names `mcp__cmem__get_observations` (Codex sends cmem's tools as
   the namespace `mcp__cmem`, registered by `cmem install --codex` in config.toml), and the
   model's call of `get_observations` in that namespace, with an id from the refusal, gets
   that observation's notes back from `cmem mcp`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.codex.e2e.fake_responses_api import (
    FakeResponsesAPI,
    Request,
    Step,
    call,
    custom,
    developer_texts,
    say,
)
from tests.e2e.harness import installed_cli, query, wait_for
from tests.support import CMEM, REPO, LiveWorker, free_port, make_worker_env
from tests.support.e2e_record import e2e_record

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PINNED_VERSION = Path(__file__).with_name("codex-version.txt").read_text().strip()
NODE_BIN = REPO / ".e2e-node" / "node_modules" / ".bin"
RUN1, RUN2, CHILD, FORK = "E2E-CX-ONE", "E2E-CX-TWO", "E2E-CX-CHILD", "E2E-CX-FORK"
RUN3 = "E2E-CX-THREE"
INDEX = "recent context"  # the SessionStart index's header line
TARGET = "".join(
    f"def handler_{i}(request):\n    return {{'handler': {i}}}\n\n\n" for i in range(60)
)
PATCH = (
    "*** Begin Patch\n*** Update File: handlers.py\n@@\n def handler_7(request):\n"
    "-    return {'handler': 7}\n+    return {'handler': 7, 'patched': True}\n*** End Patch\n"
)


def offline_config(api_url: str, *, top: str = "", tables: str = "") -> str:
    """A config.toml that sends every request to the fake Responses API at `api_url`, waits
    for cmem's MCP server, and phones nowhere; `top` keys and `tables` are added."""
    return f"""model = "gpt-fake"
model_provider = "fake"
mcp_optional_startup_grace_ms = 10000
check_for_update_on_startup = false
{top}[model_providers.fake]
name = "fake"
base_url = "{api_url}"
env_key = "FAKE_OPENAI_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
{tables}[analytics]
enabled = false
"""


def offline_env(path: str, home: Path, codex_home: Path, data: Path) -> dict[str, str]:
    """The environment `codex` runs in: its own HOME, the fake API's key, cmem's data dir."""
    return {
        "PATH": path,
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "LANG": "C.UTF-8",
        "FAKE_OPENAI_API_KEY": "sk-fake",
        # Codex tries to reach GitHub at start: keep even the attempt on this machine.
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1",
        "CLAUDE_MEM_DATA_DIR": str(data),
    }


def codex_binary() -> Path:
    """The pinned CLI from `.e2e-node/` (installed by `.ci/run`), or CMEM_CODEX_BIN.
    CI exports CMEM_E2E_REQUIRED=1 so a missing CLI fails there; elsewhere the tests skip."""
    explicit = os.environ.get("CMEM_CODEX_BIN")
    return installed_cli(
        [Path(explicit) if explicit else None, NODE_BIN / "codex"],
        name="Codex",
        package=f"@openai/codex@{PINNED_VERSION}",
    )


def _agent_id(body: dict[str, Any]) -> str:
    outputs = [i for i in body.get("input", []) if i.get("type") == "function_call_output"]
    try:
        return str(json.loads(outputs[-1]["output"])["agent_id"])
    except (IndexError, KeyError, ValueError):
        return ""


def wait_for_agent() -> Step:
    """wait_agent on the agent the previous spawn_agent returned."""

    def step(body: dict[str, Any]) -> Any:
        args = {"targets": [_agent_id(body)], "timeout_ms": 20000}
        return call("wait_agent", args, namespace="multi_agent_v1")(body)

    return step


def tool_output(body: dict[str, Any]) -> str:
    """The text of the last tool result Codex sent back to the model."""
    outputs = [i for i in body.get("input", []) if i.get("type") == "function_call_output"]
    if not outputs:
        return ""
    output = outputs[-1]["output"]
    if isinstance(output, str):
        return output
    return "\n".join(str(part.get("text", "")) for part in output if isinstance(part, dict))


# A timeline row of the gate's refusal: `<id> <clock time>  <title> [unchanged]`.
TIMELINE_ROW = re.compile(r"^(\d+) \d{1,2}:\d\d(?:[ap]m)?  .*\[unchanged\]", re.M)


def get_refused_observation() -> Step:
    """cmem's get_observations, as Codex offers it (namespace `mcp__cmem`), with the newest
    id of the refusal's timeline."""

    def step(body: dict[str, Any]) -> Any:
        found = TIMELINE_ROW.search(tool_output(body))
        ids = [found.group(1)] if found else []
        return call("get_observations", {"ids": ids}, namespace="mcp__cmem")(body)

    return step


def _scripts() -> dict[str, list[Step]]:
    spawn = "spawn_agent"
    return {
        RUN1: [
            call("exec_command", {"cmd": "cat handlers.py"}),
            # Reported usage far above the limit: Codex compacts before the next request.
            custom("apply_patch", PATCH, tokens=60_000),
            # After the compaction: SessionStart(compact) re-injected the index, so this
            # tool use's PostToolUse must not add a second one.
            call("exec_command", {"cmd": "echo after-compaction"}),
            say("Patched handler_7."),
        ],
        RUN2: [
            call("exec_command", {"cmd": "cat handlers.py"}),
            call(spawn, {"message": f"{CHILD}: look around"}, namespace="multi_agent_v1"),
            wait_for_agent(),
            call(
                spawn,
                {"message": f"{FORK}: continue", "fork_context": True},
                namespace="multi_agent_v1",
            ),
            wait_for_agent(),
            say("Both agents are done."),
        ],
        # The sub-agent compacts too; it gets no SessionStart, so its next tool use
        # brings the index back (PostCompact's mark).
        CHILD: [
            call("exec_command", {"cmd": "echo child-one"}, tokens=60_000),
            call("exec_command", {"cmd": "echo child-two"}),
            say("child done"),
        ],
        FORK: [say("fork done")],
        RUN3: [
            call("exec_command", {"cmd": "cat handlers.py"}),
            get_refused_observation(),
            say("Found it in memory."),
        ],
    }


@dataclass
class World:
    api: FakeResponsesAPI
    worker: LiveWorker
    home: Path
    project: Path
    env: dict[str, str]
    binary: Path
    install_out: str = ""
    runs: dict[str, subprocess.CompletedProcess[bytes]] = field(default_factory=dict)

    def codex(self, marker: str, prompt: str, *, model: str) -> subprocess.CompletedProcess[bytes]:
        args = [
            str(self.binary), "exec", "--json", "--skip-git-repo-check", "-m", model,
            "--dangerously-bypass-approvals-and-sandbox", f"{marker}: {prompt}",
        ]  # fmt: skip
        proc = subprocess.run(
            args, cwd=self.project, env=self.env, stdin=subprocess.DEVNULL,
            capture_output=True, timeout=90,
        )  # fmt: skip
        self.runs[marker] = proc
        return proc

    def requests(self, marker: str) -> list[Request]:
        return [r for r in self.api.requests_for(marker) if r.kind != "compaction"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    binary = codex_binary()
    root = tmp_path_factory.mktemp("codex-e2e")
    home, project, data = root / "home", root / "codex-shop", root / "cmem-data"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    project.mkdir()
    data.mkdir(mode=0o700)
    (project / "handlers.py").write_text(TARGET)
    api = FakeResponsesAPI(scripts=_scripts()).start()
    # Codex sends a turn's first request without the MCP servers not up by then (optional
    # ones get a short grace): waiting for `cmem mcp` keeps run 3's tool list certain.
    (codex_home / "config.toml").write_text(
        offline_config(
            api.url,
            top="model_auto_compact_token_limit = 20000\n",
            tables="[features]\nhooks = true\n",
        )
    )
    port = free_port()
    worker_env = make_worker_env(data, port, HOME=str(home), CLAUDE_MEM_COMPRESSOR="offline")
    worker = LiveWorker(data_dir=data, port=port, env=worker_env)
    worker.start()
    path = os.pathsep.join(
        [str(Path(CMEM).parent), str(binary.parent), "/usr/local/bin", "/usr/bin", "/bin"]
    )
    env = {
        **offline_env(path, home, codex_home, data),
        "CMEM_CODEX_BIN": str(binary),
        "CLAUDE_MEM_WORKER_HOST": "127.0.0.1",
        "CLAUDE_MEM_WORKER_PORT": str(port),
    }
    try:
        installed = subprocess.run(
            [CMEM, "install", "--codex"], env={**worker_env, **env}, cwd=project,
            capture_output=True, timeout=60,
        )  # fmt: skip
        assert installed.returncode == 0, installed.stderr.decode()[-2000:]
        yield World(api, worker, home, project, env, binary, installed.stdout.decode())
    finally:
        worker.stop()
        api.stop()
        (root / "requests.json").write_text(
            json.dumps([{"headers": r.headers, "body": r.body} for r in api.requests], indent=1)
        )
        e2e_record(
            data_dir=data,
            scratch=root,
            name=f"codex-{PINNED_VERSION}",
            agent="codex",
            version=PINNED_VERSION,
        )


@pytest.fixture(scope="module")
def run1(world: World) -> World:
    proc = world.codex(RUN1, "read handlers.py and patch handler 7", model="gpt-5.5")
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert "Patched handler_7." in proc.stdout.decode(), proc.stdout.decode()[-2000:]
    wait_for(
        lambda: query(
            world.worker,
            "SELECT 1 FROM memory_observationfile WHERE path = 'handlers.py' AND role = 'modified'",
        ),
        timeout=30,
    )
    return world


@pytest.fixture(scope="module")
def run2(run1: World) -> World:
    proc = run1.codex(RUN2, "read handlers.py, then ask two agents", model="gpt-fake")
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    return run1


@pytest.fixture(scope="module")
def run3(run2: World) -> World:
    # The setting as the web page writes it; the worker reads settings.json on each request.
    settings = run2.worker.data_dir / "settings.json"
    before = settings.read_text() if settings.exists() else None
    values = json.loads(before) if before else {}
    settings.write_text(json.dumps({**values, "CLAUDE_MEM_CODEX_SHELL_READ_GATE": "deny"}))
    try:
        proc = run2.codex(RUN3, "read handlers.py", model="gpt-fake")
    finally:
        if before is None:
            settings.unlink()
        else:
            settings.write_text(before)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    return run2


def test_install_trusts_exactly_cmems_hooks(world: World) -> None:
    assert "trusted 8 cmem hook(s)" in world.install_out, world.install_out
    config = (world.home / ".codex" / "config.toml").read_text()
    assert config.count("trusted_hash") == 8
    assert all("hooks.json" in k for k in re.findall(r'\[hooks\.state\."([^"]+)"\]', config))


def test_run1_stores_the_shell_read_and_the_patch(run1: World) -> None:
    sessions = query(run1.worker, "SELECT id, platform, project FROM memory_session")
    assert [(s["platform"], s["project"]) for s in sessions] == [("codex", "codex-shop")]
    events = query(
        run1.worker,
        "SELECT tool_name, payload FROM memory_event WHERE kind = 'observation' ORDER BY id",
    )
    assert [e["tool_name"] for e in events] == ["Bash", "apply_patch", "Bash"]
    bash, patch = (json.loads(e["payload"]) for e in events[:2])
    assert bash["tool_input"] == {"command": "cat handlers.py"}
    assert "handler_59" in bash["tool_response"]
    assert [(f["path"], f["role"]) for f in patch["cmem_files"]] == [("handlers.py", "modified")]
    assert "'patched': True" in (run1.project / "handlers.py").read_text()
    prompts = query(run1.worker, "SELECT text FROM memory_prompt")
    assert [RUN1 in p["text"] for p in prompts] == [True]


def test_run1_index_at_start_and_again_after_compaction(run1: World) -> None:
    compactions = [r for r in run1.api.requests_for(RUN1) if r.kind == "compaction"]
    assert len(compactions) == 1, "Codex did not compact"
    sent = run1.requests(RUN1)
    assert len(sent) == 4
    first, after, last = sent[0], sent[2], sent[3]
    assert sum(INDEX in t for t in developer_texts(first.body)) == 1
    # The compacted history lost the first index; SessionStart(compact) put one back.
    assert "FAKE-COMPACTION-SUMMARY" in json.dumps(after.body["input"])
    assert sum(INDEX in t for t in developer_texts(after.body)) == 1
    # ...and the tool use after it did not add a second (the PostCompact mark was cleared).
    assert sum(INDEX in t for t in developer_texts(last.body)) == 1


def test_run2_shell_read_gets_the_files_timeline(run2: World) -> None:
    sent = run2.requests(RUN2)
    second = developer_texts(sent[1].body)
    assert any("This file has prior observations" in t for t in second), second[-3:]
    assert any(INDEX in t for t in developer_texts(sent[0].body))


def test_run2_subagent_gets_the_index_and_the_fork_does_not(run2: World) -> None:
    child = run2.requests(CHILD)
    assert child, "the sub-agent never called the model"
    assert sum(INDEX in t for t in developer_texts(child[0].body)) == 1
    fork = run2.requests(FORK)
    assert fork, "the forked sub-agent never called the model"
    # A fork holds its parent's history, the parent's one index included, and no second.
    parent_count = sum(INDEX in t for t in developer_texts(run2.requests(RUN2)[0].body))
    assert parent_count == 1
    assert sum(INDEX in t for t in developer_texts(fork[0].body)) == parent_count
    sessions = query(run2.worker, "SELECT session_id FROM memory_session ORDER BY id")
    assert len(sessions) == 2  # sub-agents belong to their root session


def test_run1_stop_and_session_end_reach_the_worker(run1: World) -> None:
    session = query(run1.worker, "SELECT id, status FROM memory_session")[0]
    summaries = wait_for(
        lambda: query(
            run1.worker,
            "SELECT 1 FROM memory_event WHERE kind = 'summary' AND session_id = ?",
            (session["id"],),
        ),
        timeout=30,
    )
    assert summaries, "Stop queued no summary"
    assert session["status"] == "completed"
    observations = wait_for(
        lambda: query(
            run1.worker, "SELECT id FROM memory_observation WHERE session_id = ?", (session["id"],)
        ),
        timeout=30,
    )
    assert observations, "nothing was compressed into an observation"


def test_run2_compacted_subagent_gets_the_index_back_at_its_next_tool_use(run2: World) -> None:
    assert [r for r in run2.api.requests_for(CHILD) if r.kind == "compaction"], "no compaction"
    first, after_compaction, after_tool = run2.requests(CHILD)[:3]
    assert sum(INDEX in t for t in developer_texts(first.body)) == 1
    # Compaction dropped the index and a sub-agent gets no SessionStart...
    assert "FAKE-COMPACTION-SUMMARY" in json.dumps(after_compaction.body["input"])
    assert sum(INDEX in t for t in developer_texts(after_compaction.body)) == 0
    # ...so the PostCompact mark made its next PostToolUse bring it back, once.
    assert sum(INDEX in t for t in developer_texts(after_tool.body)) == 1


def test_run3_refusal_names_cmems_mcp_tool_and_codex_calls_it(run3: World) -> None:
    sent = run3.requests(RUN3)
    assert len(sent) == 3, [tool_output(r.body)[:300] for r in sent]
    # `cmem install --codex` registered the server: Codex offers its tools as `mcp__cmem`.
    namespaces = {t["name"]: t for t in sent[1].body["tools"] if t.get("type") == "namespace"}
    assert "get_observations" in [t["name"] for t in namespaces["mcp__cmem"]["tools"]]
    refusal = tool_output(sent[1].body)
    assert "Read blocked" in refusal, refusal[:2000]
    assert "mcp__cmem__get_observations([IDs])" in refusal
    session = query(run3.worker, "SELECT id FROM memory_session ORDER BY id")[-1]["id"]
    tools = query(
        run3.worker,
        "SELECT tool_name FROM memory_event WHERE kind = 'observation' AND session_id = ?",
        (session,),
    )
    # The refused read never ran; the MCP call's PostToolUse names it as Codex's model does.
    assert [t["tool_name"] for t in tools] == ["mcp__cmem__get_observations"]
    asked = TIMELINE_ROW.search(refusal)
    assert asked, refusal[-1500:]
    call_item = [i for i in sent[2].body["input"] if i.get("type") == "function_call"][-1]
    assert (call_item.get("namespace"), call_item["name"]) == ("mcp__cmem", "get_observations")
    # What cmem's MCP server answered, as Codex sent it back to the model: that observation.
    answer = tool_output(sent[2].body)
    rows = query(run3.worker, "SELECT id, title, narrative FROM memory_observation")
    shown = [r for r in rows if r["title"] and r["title"] in answer]
    assert [r["id"] for r in shown] == [int(asked.group(1))], answer[:2000]
    assert shown[0]["narrative"] and shown[0]["narrative"][:60] in answer, answer[:2000]
    assert "Found it in memory." in run3.runs[RUN3].stdout.decode()
