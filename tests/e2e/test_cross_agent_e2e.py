"""One memory across agents, with two real CLIs: Claude Code (pinned in
claude-code-version.txt) and the Gemini CLI (tests/agents/e2e/gemini-cli-version.txt, the
fastest of the agents whose gate refuses) share one HOME, one worker and one data dir.

Two projects, one per direction, each worked on by both agents in turn:
- `claude-then-gemini`: Claude Code's session reads handlers.py, the read is captured and
  compressed by the fake model into an observation; then a Gemini session in the same project
  starts with that observation's index line, and its read_file of handlers.py is refused by
  the gate with that observation in the timeline;
- `gemini-then-claude`: the same, the other way round: Claude Code's first request to the
  Messages API holds the index line of Gemini's observation, and its Read gets the refusal.

Every observation the second agent is shown is checked to come from the first agent's
session (its `platform`), and the refusal is checked to be written in the second agent's
session. The two directions run side by side (one agent of each in each step), so the
file costs about one direction's time.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.agents.e2e.fake_model_apis import FakeGeminiAPI
from tests.agents.e2e.fake_model_apis import call as gemini_call
from tests.agents.e2e.fake_model_apis import say as gemini_say
from tests.agents.e2e.harness import TARGET, agent_binary, agent_env, install_agent, pinned
from tests.agents.e2e.harness import World as AgentWorld
from tests.e2e.fake_claude_api import FakeClaudeAPI, request_text, text, tool, tool_results
from tests.e2e.harness import Claude, claude_binary, claude_env, cmem_install, query, wait_for
from tests.support import LiveWorker, free_port, make_worker_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

GEMINI_VERSION = pinned("gemini-cli")
GEMINI_MODEL = "gemini-2.5-flash"
FIRST_CLAUDE, THEN_GEMINI = "claude-then-gemini", "gemini-then-claude"
# The script markers: CC = Claude Code, GM = Gemini; ONE = the first session of a project.
CC_ONE, GM_TWO = "X-CC-ONE", "X-GM-TWO"  # project claude-then-gemini
GM_ONE, CC_TWO = "X-GM-ONE", "X-CC-TWO"  # project gemini-then-claude


@dataclass
class Observation:
    pk: int
    title: str
    platform: str


@dataclass
class Cross:
    worker: LiveWorker
    claude_api: FakeClaudeAPI
    gemini_api: FakeGeminiAPI
    claude: dict[str, Claude]  # by project
    gemini: dict[str, AgentWorld]  # by project
    # The observations of handlers.py each project held when its second session started.
    before_second: dict[str, list[Observation]] = field(default_factory=dict)
    # Wall time of each step, for the CI-time figure (printed by test_e2e_wall_time).
    seconds: dict[str, float] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)

    def lap(self, step: str) -> None:
        now = time.monotonic()
        self.seconds[step] = round(now - self.started, 1)
        self.started = now

    def observations_of_target(self, project: str) -> list[Observation]:
        rows = query(
            self.worker,
            "SELECT o.id, o.title, s.platform FROM memory_observation o"
            " JOIN memory_observationfile f ON f.observation_id = o.id"
            " JOIN memory_session s ON s.id = o.session_id"
            " WHERE f.path = 'handlers.py' AND o.project = ? ORDER BY o.id",
            (project,),
        )
        return [Observation(int(r["id"]), str(r["title"]), str(r["platform"])) for r in rows]

    def ledger_denials(self, project: str) -> list[str]:
        """The platform of each session the gate refused handlers.py in, in `project`."""
        rows = query(
            self.worker,
            "SELECT s.platform FROM memory_ledgerentry l JOIN memory_session s"
            " ON s.id = l.session_id WHERE l.kind = 'gate_deny' AND l.project = ?"
            " AND l.path LIKE '%handlers.py'",
            (project,),
        )
        return [str(r["platform"]) for r in rows]


def side_by_side(*steps: Callable[[], None]) -> None:
    """Run the steps at once (they touch nothing in common: one CLI per project, one install
    per agent) and re-raise the first failure."""
    with ThreadPoolExecutor(len(steps)) as pool:
        for future in [pool.submit(step) for step in steps]:
            future.result()


@pytest.fixture(scope="module")
def cross(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cross]:
    claude_bin = claude_binary()
    gemini_bin = agent_binary(
        "gemini", env_var="CMEM_GEMINI_BIN", name="Gemini CLI",
        package=f"@google/gemini-cli@{GEMINI_VERSION}",
    )  # fmt: skip
    started = time.monotonic()
    root = tmp_path_factory.mktemp("cross-e2e")
    home, data = root / "home", root / "cmem-data"
    home.mkdir()
    data.mkdir(mode=0o700)
    projects = {name: root / name for name in (FIRST_CLAUDE, THEN_GEMINI)}
    for project in projects.values():
        project.mkdir()
        (project / "handlers.py").write_text(TARGET)
    # The user's Gemini login, as test_gemini_e2e has it.
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}})
    )

    def claude_reads(project: Path) -> list[Any]:
        return [tool("Read", {"file_path": str(project / "handlers.py")}), text("Read it.")]

    gemini_reads = [gemini_call("read_file", file_path="handlers.py"), gemini_say("Read it.")]
    claude_api = FakeClaudeAPI(
        scripts={
            CC_ONE: claude_reads(projects[FIRST_CLAUDE]),
            CC_TWO: claude_reads(projects[THEN_GEMINI]),
        }
    ).start()
    gemini_api = FakeGeminiAPI({GM_ONE: gemini_reads, GM_TWO: gemini_reads})
    gemini_api.start()
    port = free_port()
    # Every observation is compressed by the fake Anthropic API, whichever agent it came
    # from; the gate is pinned to refusing, as in test_claude_code_e2e.
    worker_env = make_worker_env(
        data,
        port,
        HOME=str(home),
        CLAUDE_MEM_ANTHROPIC_BASE_URL=claude_api.url,
        ANTHROPIC_API_KEY="sk-ant-e2e-fake",
        CLAUDE_MEM_COMPRESSOR="api",
        CLAUDE_MEM_READ_GATE="deny",
    )
    worker = LiveWorker(data_dir=data, port=port, env=worker_env)
    try:
        env = claude_env(home=home, api_url=claude_api.url, worker=worker)
        settings = home / ".claude" / "settings.json"
        gemini_env = agent_env(
            home=home, worker=worker, binary=gemini_bin,
            env={
                "GEMINI_API_KEY": "fake-key",
                "GOOGLE_GEMINI_BASE_URL": gemini_api.url,
                "GEMINI_CLI_TRUST_WORKSPACE": "true",
            },
        )  # fmt: skip

        def install_claude() -> None:
            installed = cmem_install(settings=settings, env={**worker_env, **env})
            assert installed.returncode == 0, installed.stderr.decode()[-2000:]

        # The installs write only their agent's own files (and need no worker): all at once.
        side_by_side(
            worker.start,
            install_claude,
            lambda: install_agent("gemini", env={**worker_env, **gemini_env}, cwd=root),
        )
        cross = Cross(
            worker=worker,
            claude_api=claude_api,
            gemini_api=gemini_api,
            claude={
                name: Claude(claude_bin, home, project, settings, env)
                for name, project in projects.items()
            },
            gemini={
                name: AgentWorld(worker, home, project, gemini_env, gemini_bin)
                for name, project in projects.items()
            },
            started=started,
        )
        cross.lap("worker up, both installed")
        yield cross
    finally:
        worker.stop()
        claude_api.stop()
        gemini_api.stop()
        # Kept for post-mortems: what each CLI and the compressor sent.
        (root / "claude_requests.json").write_text(json.dumps(claude_api.requests, indent=1))
        (root / "gemini_requests.json").write_text(
            json.dumps([r.body for r in gemini_api.requests], indent=1)
        )


def run_claude(cross: Cross, project: str, marker: str) -> None:
    result = cross.claude[project].run(f"{marker}: read handlers.py")
    assert result.returncode == 0, result.stderr[-2000:]


def run_gemini(cross: Cross, project: str, marker: str) -> None:
    args = ["-p", f"{marker}: read handlers.py", "--yolo", "-m", GEMINI_MODEL, "-o", "json"]
    proc = cross.gemini[project].run(marker, args)
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode()[-3000:]


@pytest.fixture(scope="module")
def firsts(cross: Cross) -> Cross:
    """Each project's first session, at once: Claude Code in one, Gemini in the other; then
    both reads compressed into observations."""
    side_by_side(
        lambda: run_claude(cross, FIRST_CLAUDE, CC_ONE),
        lambda: run_gemini(cross, THEN_GEMINI, GM_ONE),
    )
    cross.lap("first sessions")
    for project in (FIRST_CLAUDE, THEN_GEMINI):
        seen = wait_for(lambda p=project: cross.observations_of_target(p), timeout=45)
        assert seen, f"the first session's read in {project} was not compressed"
        cross.before_second[project] = seen
    cross.lap("compressed")
    return cross


@pytest.fixture(scope="module")
def seconds(firsts: Cross) -> Cross:
    """Each project's second session, by the other agent, at once."""
    side_by_side(
        lambda: run_gemini(firsts, FIRST_CLAUDE, GM_TWO),
        lambda: run_claude(firsts, THEN_GEMINI, CC_TWO),
    )
    firsts.lap("second sessions")
    return firsts


def gemini_user_text(body: dict[str, Any]) -> str:
    return "\n".join(
        part.get("text", "")
        for content in body.get("contents", [])
        if content.get("role") == "user"
        for part in content.get("parts", [])
    )


def gemini_tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        part["functionResponse"]
        for content in body.get("contents", [])
        for part in content.get("parts", [])
        if "functionResponse" in part
    ]


def row_of(said: str, observation: Observation) -> str:
    """The row naming `observation` by id, then title (the index and the refusal's timeline
    both start a row with the id), or ""."""
    found = re.search(rf"(?m)^{observation.pk}\s.*{re.escape(observation.title)}.*$", said)
    return found.group(0) if found else ""


def test_the_first_sessions_observations_are_their_agents(firsts: Cross) -> None:
    assert {o.platform for o in firsts.before_second[FIRST_CLAUDE]} == {"claude-code"}
    assert {o.platform for o in firsts.before_second[THEN_GEMINI]} == {"gemini"}
    # Compressed by the fake model, not by the offline fallback.
    assert all(o.title.startswith("E2E API observation") for obs in firsts.before_second.values()
               for o in obs), firsts.before_second  # fmt: skip


def test_gemini_starts_with_claude_codes_observation_in_its_index(seconds: Cross) -> None:
    said = gemini_user_text(seconds.gemini_api.requests_for(GM_TWO)[0].body)
    for observation in seconds.before_second[FIRST_CLAUDE]:
        assert observation.platform == "claude-code"
        assert row_of(said, observation), (observation, said[:3000])


def test_geminis_read_is_refused_with_claude_codes_observation(seconds: Cross) -> None:
    after_read = seconds.gemini_api.requests_for(GM_TWO)[1].body
    responses = gemini_tool_results(after_read)
    assert [r["name"] for r in responses] == ["read_file"], responses
    said = str(responses[0]["response"].get("error", ""))
    assert "Read blocked" in said, responses
    assert "mcp_cmem_get_observations(" in said  # the tools as Gemini names them
    assert "'handler': 59" not in said  # the file's body was not read
    for observation in seconds.before_second[FIRST_CLAUDE]:
        assert row_of(said, observation), (observation, said[:3000])
    # The refusal was made in Gemini's session, on Claude Code's observations only.
    assert seconds.ledger_denials(FIRST_CLAUDE) == ["gemini"]
    assert {o.platform for o in seconds.observations_of_target(FIRST_CLAUDE)} == {"claude-code"}


def test_claude_code_starts_with_geminis_observation_in_its_index(seconds: Cross) -> None:
    said = request_text(seconds.claude_api.requests_for(CC_TWO)[0])
    assert "SessionStart hook additional context" in said
    for observation in seconds.before_second[THEN_GEMINI]:
        assert observation.platform == "gemini"
        assert row_of(said, observation), (observation, said[-3000:])


def test_claude_codes_read_is_refused_with_geminis_observation(seconds: Cross) -> None:
    results = tool_results(seconds.claude_api.requests_for(CC_TWO)[-1])
    assert len(results) == 1, results
    refused = results[0]
    assert refused.get("is_error") is True, refused
    content = refused["content"]
    said = content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)
    assert "Read blocked" in said, said[:2000]
    assert "mcp__" in said and "get_observations(" in said  # the tools as Claude Code names them
    assert "'handler': 59" not in said
    for observation in seconds.before_second[THEN_GEMINI]:
        assert row_of(said, observation), (observation, said[:3000])
    assert seconds.ledger_denials(THEN_GEMINI) == ["claude-code"]
    assert {o.platform for o in seconds.observations_of_target(THEN_GEMINI)} == {"gemini"}


def test_e2e_wall_time(seconds: Cross) -> None:
    # Recorded for the CI-time figure; a hang would show here first.
    assert all(s < 90 for s in seconds.seconds.values()), seconds.seconds
    print(f"cross-agent steps (s): {seconds.seconds}")
