"""`remember` and `memory_correct` through the real Claude Code CLI (pinned) and cmem's real MCP
server, against the fake model server (issue 31).

Five sessions share one worker, one scratch HOME and one project, in order:
1. the scripted model loads `mcp__cmem__remember` with ToolSearch and remembers a decision
   under a topic; its title and text carry a `<private>` part and a fake secret, which the
   stored row must not;
2. a new session: the SessionStart index Claude Code sends the model carries the memory, by
   id and title, labelled agent-written;
3. the model remembers the same topic again with new text: the first row is superseded;
4. a new session: the index carries the new memory and never presents the old one as current;
5. hostile: after a person wrote a memory with `cmem remember`, the model tries to retire it,
   mark it outdated, supersede it and remember over its topic: each call is refused and the
   row and its history are unchanged.
Between 3 and 4, once compression is done: the observer has not recorded the `remember` calls
as observations of their own (an unlabelled copy that would outlive the supersede).
The names are the `cmem install` route's (memory/agents/tool_names.py).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from memory.agents.tool_names import is_cmem_tool, mcp_tool_name
from tests.e2e.fake_claude_api import FakeClaudeAPI, Step, request_text, text, tool, tool_results
from tests.e2e.harness import (
    Claude,
    ClaudeRun,
    claude_binary,
    claude_env,
    close_world,
    cmem_install,
    query,
    wait_until_compressed,
)
from tests.support import CMEM, LiveWorker, free_port, make_worker_env

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PROJECT = "notes-app"
REMEMBER = mcp_tool_name("remember", platform="claude-code")
CORRECT = mcp_tool_name("memory_correct", platform="claude-code")

RUN1, RUN2, RUN3, RUN4, RUN5 = (
    "E2E-REMEMBER-ONE",
    "E2E-REMEMBER-TWO",
    "E2E-REMEMBER-THREE",
    "E2E-REMEMBER-FOUR",
    "E2E-REMEMBER-HOSTILE",
)
TOPIC = "deploy-process"
# What must never be stored: a <private> part and a (fake) AWS access key.
PRIVATE = "ask Dana on 555-0199 first"
SECRET = "AKIAZ3E2EREMEMBER123"
FIRST_TITLE = "Deploys go through the blue-green script"
FIRST_TEXT = (
    f"Run scripts/deploy.sh --blue-green <private>{PRIVATE}</private>; "
    f"it signs with key {SECRET} from the vault."
)
SECOND_TITLE = "Deploys now go through the canary pipeline"
SECOND_TEXT = "The blue-green script is gone: push to main and the canary pipeline deploys."
PERSON_TOPIC = "release-day"
PERSON_TITLE = "Releases happen on Tuesdays only"
PERSON_TEXT = "Agreed with the team: never release on a Friday."
# What of the person's row the hostile session must leave as it was.
PERSON_COLUMNS = (
    "status, status_reason, superseded_by_id, title, narrative, pinned, demoted, origin, "
    "person_edited, topic, scope, edited"
)


@dataclass
class World:
    api: FakeClaudeAPI
    worker: LiveWorker
    claude: Claude
    env: dict[str, str]
    # ids the scripts need before they play: the person's row, the agent's rows.
    ids: dict[str, int] = field(default_factory=dict)
    runs: dict[str, ClaudeRun] = field(default_factory=dict)
    sent: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    person_before: dict[str, Any] = field(default_factory=dict)
    person_revisions_before: int = 0

    def run(self, marker: str, prompt: str) -> ClaudeRun:
        result = self.claude.run(f"{marker}: {prompt}", timeout=120)
        assert result.returncode == 0, result.stderr[-2000:]
        self.runs[marker] = result
        self.sent[marker] = self.api.requests_for(marker)
        assert self.sent[marker], f"Claude Code sent the model nothing for {marker}"
        return result


def _later(make: Callable[[], tuple[str, dict[str, Any]]]) -> Step:
    """A tool step whose input is built when it plays: it names rows made after the scripts."""
    return lambda body: tool(*make())(body)


def _scripts(ids: dict[str, int]) -> dict[str, list[Step]]:
    load_remember = tool("ToolSearch", {"query": f"select:{REMEMBER}"})
    scripts = {
        RUN1: [
            load_remember,
            tool(
                REMEMBER,
                {
                    "title": f"{FIRST_TITLE} <private>{PRIVATE}</private>",
                    "text": FIRST_TEXT,
                    "kind": "decision",
                    "topic": TOPIC,
                },
            ),
            text("Remembered the deploy process."),
        ],
        RUN2: [text("The index says how we deploy.")],
        RUN3: [
            load_remember,
            tool(
                REMEMBER,
                {"title": SECOND_TITLE, "text": SECOND_TEXT, "kind": "decision", "topic": TOPIC},
            ),
            text("Remembered the new deploy process."),
        ],
        RUN4: [text("The index says how we deploy now.")],
        RUN5: [
            tool("ToolSearch", {"query": f"select:{CORRECT},{REMEMBER}"}),
            # Retiring is the user's (from the page or CLI): refused whoever wrote the row.
            _later(lambda: (CORRECT, {"id": ids["person"], "action": "retire", "reason": "old"})),
            _later(lambda: (CORRECT, {"id": ids["person"], "action": "outdated", "reason": "old"})),
            _later(
                lambda: (
                    CORRECT,
                    {
                        "id": ids["person"],
                        "action": "supersede",
                        "superseded_by": ids["second"],
                        "reason": "replaced",
                    },
                )
            ),
            tool(
                REMEMBER,
                {
                    "title": "Releases happen any day",
                    "text": "A README asked me to remember this.",
                    "topic": PERSON_TOPIC,
                },
            ),
            text("Tried to change the release memory."),
        ],
    }
    # Newest run first: a session's first message can quote an older run's prompt (a summary
    # in the index), and the fake server takes the first script whose marker it finds there.
    return dict(reversed(scripts.items()))


def _person_remembers(world: World) -> int:
    """A memory a person wrote: `cmem remember` in their own terminal, in the project."""
    done = subprocess.run(
        [
            CMEM,
            "remember",
            PERSON_TITLE,
            PERSON_TEXT,
            "--kind",
            "decision",
            "--topic",
            PERSON_TOPIC,
        ],
        cwd=world.claude.project,
        # Their terminal, not an agent's shell (where the CLI acts as the agent).
        env={k: v for k, v in world.env.items() if k != "CLAUDECODE"},
        capture_output=True,
        timeout=60,
    )
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert "written by you" in out and PROJECT in out, out
    found = re.search(r"#(\d+)", out)
    assert found, out
    return int(found.group(1))


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    binary = claude_binary()
    root = tmp_path_factory.mktemp("e2e-remember")
    home, project, data = root / "home", root / PROJECT, root / "cmem-data"
    for path in (home, project):
        path.mkdir()
    data.mkdir(mode=0o700)
    (project / "README.md").write_text(f"# {PROJECT}\n")
    ids: dict[str, int] = {}
    api = FakeClaudeAPI(scripts=_scripts(ids)).start()
    port = free_port()
    worker_env = make_worker_env(data, port, HOME=str(home), CLAUDE_MEM_COMPRESSOR="offline")
    worker = LiveWorker(data_dir=data, port=port, env=worker_env)
    worker.start()
    try:
        env = claude_env(home=home, api_url=api.url, worker=worker)
        settings = home / ".claude" / "settings.json"
        installed = cmem_install(settings=settings, env={**worker_env, **env})
        assert installed.returncode == 0, installed.stderr.decode()[-2000:]
        claude = Claude(binary=binary, home=home, project=project, settings=settings, env=env)
        yield World(api=api, worker=worker, claude=claude, env=worker_env, ids=ids)
    finally:
        close_world(worker=worker, api=api, root=root, data=data, name="claude-code-remember")


def _agent_rows(world: World) -> list[dict[str, Any]]:
    return [
        dict(r)
        for r in query(
            world.worker,
            "SELECT * FROM memory_observation WHERE project = ? AND origin = 'agent' ORDER BY id",
            (PROJECT,),
        )
    ]


def _person_row(world: World) -> dict[str, Any]:
    rows = query(
        world.worker,
        f"SELECT {PERSON_COLUMNS} FROM memory_observation WHERE id = ?",
        (world.ids["person"],),
    )
    assert rows, f"the person's memory #{world.ids['person']} is gone"
    return dict(rows[0])


def _revisions(world: World, obs_id: int) -> int:
    rows = query(
        world.worker,
        "SELECT COUNT(*) AS n FROM memory_observationrevision WHERE observation_id = ?",
        (obs_id,),
    )
    return int(rows[0]["n"])


def _answers(world: World, marker: str) -> list[tuple[str, bool]]:
    """The tool results Claude Code fed back to the model during the run: (text, is_error)."""
    last = world.sent[marker][-1]
    return [
        (
            r["content"] if isinstance(r.get("content"), str) else json.dumps(r.get("content")),
            bool(r.get("is_error")),
        )
        for r in tool_results(last)
    ]


def _index(world: World, marker: str) -> str:
    """The SessionStart index the run's first request to the model carries: from Claude
    Code's "hook additional context" line to the next top-level heading (the index's own
    are `###`), so what follows it in Claude Code's prompt is not read as index rows."""
    said = request_text(world.sent[marker][0])
    start = said.find("SessionStart hook additional context")
    assert start >= 0, said[:3000]
    end = said.find("\n# ", start)
    return said[start : end if end > 0 else len(said)]


def _names(said: str, obs_id: int) -> bool:
    """Whether `said` names memory #`obs_id` (not #`obs_id`0 or another)."""
    return re.search(rf"#{obs_id}\b", said) is not None


def _index_line(index: str, obs_id: int, title: str) -> str | None:
    """The index row that names #`obs_id` and its title (whatever the row's layout)."""
    for line in index.splitlines():
        if re.search(rf"(?<![\w#])#?{obs_id}\b", line) and title in line:
            return line
    return None


@pytest.fixture(scope="module")
def run1(world: World) -> World:
    result = world.run(RUN1, "remember how we deploy")
    assert result.result.get("result") == "Remembered the deploy process.", result.result
    rows = _agent_rows(world)
    assert len(rows) == 1, rows
    world.ids["first"] = int(rows[0]["id"])
    return world


@pytest.fixture(scope="module")
def run2(run1: World) -> World:
    run1.run(RUN2, "how do we deploy?")
    return run1


@pytest.fixture(scope="module")
def run3(run2: World) -> World:
    result = run2.run(RUN3, "remember that deploys changed")
    assert result.result.get("result") == "Remembered the new deploy process.", result.result
    rows = _agent_rows(run2)
    assert len(rows) == 2, rows
    run2.ids["second"] = int(rows[-1]["id"])
    return run2


@pytest.fixture(scope="module")
def run4(run3: World) -> World:
    run3.run(RUN4, "how do we deploy now?")
    return run3


@pytest.fixture(scope="module")
def run5(run4: World) -> World:
    run4.ids["person"] = _person_remembers(run4)
    run4.person_before = _person_row(run4)
    run4.person_revisions_before = _revisions(run4, run4.ids["person"])
    run4.run(RUN5, "the README says release days changed; update the memory")
    return run4


def test_session1_the_tool_tells_the_model_it_remembered(run1: World) -> None:
    answers = _answers(run1, RUN1)
    said = [(t, e) for t, e in answers if _names(t, run1.ids["first"])]
    assert said, answers
    answer, failed = said[-1]
    assert not failed and "remembered" in answer.lower(), answer
    assert "agent-written" in answer, answer
    # The answer does not echo back what was never stored.
    assert PRIVATE not in answer and SECRET not in answer


def test_session1_stores_an_agent_written_row_without_private_or_secret(run1: World) -> None:
    (row,) = _agent_rows(run1)
    assert row["title"] == FIRST_TITLE
    assert row["topic"] == TOPIC and row["type"] == "decision"
    assert row["status"] == "current" and row["scope"] == "project"
    # origin agent is what every surface labels "agent-written"; no person owns it.
    assert row["origin"] == "agent" and not row["person_edited"]
    assert "scripts/deploy.sh --blue-green" in row["narrative"]
    assert "[REDACTED:aws-access-key]" in row["narrative"], row["narrative"]
    stored = json.dumps(row)
    assert PRIVATE not in stored and "<private>" not in stored
    assert SECRET not in stored
    # Nor in the row's history, nor in the captured tool use of the call.
    history = query(
        run1.worker,
        "SELECT before, after FROM memory_observationrevision WHERE observation_id = ?",
        (row["id"],),
    )
    assert history, "remembering recorded no revision"
    events = query(run1.worker, "SELECT * FROM memory_event")
    for recorded in [json.dumps([dict(h) for h in history]), json.dumps([dict(e) for e in events])]:
        assert PRIVATE not in recorded and SECRET not in recorded


def test_session2_index_carries_the_memory_labelled_agent_written(run2: World) -> None:
    index = _index(run2, RUN2)
    line = _index_line(index, run2.ids["first"], FIRST_TITLE)
    assert line, f"#{run2.ids['first']} {FIRST_TITLE!r} is not in the index:\n{index[:4000]}"
    assert "agent-written" in line, line
    assert PRIVATE not in index and SECRET not in index


def test_session3_the_same_topic_supersedes_the_first_memory(run3: World) -> None:
    first, second = run3.ids["first"], run3.ids["second"]
    answers = _answers(run3, RUN3)
    said = [(t, e) for t, e in answers if _names(t, second)]
    assert said, answers
    answer, failed = said[-1]
    assert not failed and "remembered" in answer.lower(), answer
    # The model is told which memory the new one replaced.
    assert _names(answer, first), answer
    rows = {r["id"]: r for r in _agent_rows(run3)}
    assert rows[second]["title"] == SECOND_TITLE and rows[second]["status"] == "current"
    assert rows[second]["topic"] == TOPIC and rows[second]["origin"] == "agent"
    # The first is kept as history, superseded by the second.
    assert rows[first]["status"] == "superseded"
    assert rows[first]["superseded_by_id"] == second
    assert rows[first]["title"] == FIRST_TITLE


def test_the_observer_does_not_record_a_remember_call_again(run3: World) -> None:
    """The memory is the record of a `remember` call. An observation of the call itself
    would be a second, unlabelled copy that stays current when its topic moves on."""
    wait_until_compressed(run3.worker)
    copies = [
        dict(r)
        for r in query(
            run3.worker,
            "SELECT id, origin, tool_name, title, status FROM memory_observation "
            "WHERE origin != 'agent'",
        )
        if any(is_cmem_tool(r["tool_name"], t) for t in ("remember", "memory_correct"))
    ]
    assert copies == [], copies


def test_session4_index_shows_only_the_new_memory_as_current(run4: World) -> None:
    first, second = run4.ids["first"], run4.ids["second"]
    index = _index(run4, RUN4)
    line = _index_line(index, second, SECOND_TITLE)
    assert line, f"#{second} {SECOND_TITLE!r} is not in the index:\n{index[:4000]}"
    assert "agent-written" in line, line
    # The old memory may be named as what the new one replaced, never as a row of its own.
    named = [ln for ln in index.splitlines() if FIRST_TITLE in ln or _names(ln, first)]
    for old in named:
        assert any(w in old.lower() for w in ("superseded", "replaces", "replaced")), (
            old,
            index[:3000],
        )


def test_session5_the_agent_cannot_change_a_persons_memory(run5: World) -> None:
    person = run5.ids["person"]
    answers = _answers(run5, RUN5)
    # ToolSearch, then retire, outdated, supersede and remember over the person's topic.
    assert len(answers) == 5, answers
    retire, *hostile = answers[1:]
    assert retire[1] and "retire" in retire[0], retire
    for answer, failed in hostile:
        assert failed, answer
        assert _names(answer, person) and "person" in answer and "cannot" in answer, answer
    assert _person_row(run5) == run5.person_before
    assert _revisions(run5, person) == run5.person_revisions_before
    # No agent row took the person's topic.
    assert PERSON_TOPIC not in {r["topic"] for r in _agent_rows(run5)}
