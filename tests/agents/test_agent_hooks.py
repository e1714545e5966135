"""The Gemini CLI, Copilot CLI, OpenCode, Qwen Code, Kilo Code CLI and Factory Droid adapters on the payloads captured from each CLI
(tests/fixtures/<agent>-<version>/), through the real endpoint (`POST /api/hooks/<agent>/
<event>`), real SQLite and the offline compressor: one session read a file, a second one
gets the index, and its read is refused in the shape that agent accepts."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from memory.agents import copilot, droid, gemini, kilo, opencode, qwen
from memory.agents.base import GateDecision, HookEvent, HookInputError, HookResult
from memory.models import Event, ObservationFile, Prompt, Session
from tests.support import FIXTURES
from tests.support.huey_tasks import delayed_tasks_run

pytestmark = pytest.mark.django_db(transaction=True)

BIG = "".join(f"def handler_{i}(request):\n    return {{'handler': {i}}}\n\n\n" for i in range(60))


@dataclass
class Agent:
    platform: str
    fixtures: str
    # cmem event -> fixture file
    files: dict[str, str]
    path_key: str  # where the read tool's path goes
    relative: bool  # the read tool takes a relative path

    def payload(self, event: str, root: Path, session: str) -> dict[str, Any]:
        data = json.loads((FIXTURES / self.fixtures / self.files[event]).read_text())
        data["cwd"] = str(root)
        for key in ("session_id", "sessionId", "sessionID"):
            if key in data:
                data[key] = session
        path = "handlers.py" if self.relative else str(root / "handlers.py")
        for key in ("tool_input", "toolArgs", "args"):
            if isinstance(data.get(key), dict):
                data[key] = {**data[key], self.path_key: path}
        if self.platform in {"gemini", "qwen"} and event == "observation":
            data["tool_response"]["llmContent"] = BIG
        if self.platform == "droid" and event == "observation":
            data["tool_response"] = BIG
        if self.platform == "copilot" and event == "observation":
            data["toolResult"]["textResultForLlm"] = BIG
        if self.platform in {"opencode", "kilo"} and event == "observation":
            data["output"]["output"] = BIG
        return data


AGENTS = {
    "gemini": Agent(
        "gemini", "gemini-cli-0.61.0",
        {"context": "SessionStart.json", "session-init": "BeforeAgent.json",
         "file-context": "BeforeTool.json", "observation": "AfterTool.json",
         "summarize": "AfterAgent.json", "session-end": "SessionEnd.json"},
        "file_path", True,
    ),
    "copilot": Agent(
        "copilot", "copilot-cli-1.0.102",
        {"context": "sessionStart.json", "session-init": "userPromptSubmitted.json",
         "file-context": "preToolUse.json", "observation": "postToolUse.json",
         "summarize": "agentStop.json", "session-end": "sessionEnd.json"},
        "path", False,
    ),
    "opencode": Agent(
        "opencode", "opencode-1.18.33",
        {"context": "session.created.json", "session-init": "chat.message.json",
         "file-context": "tool.execute.before.json", "observation": "tool.execute.after.json",
         "summarize": "session.idle.json", "session-end": "session.deleted.json"},
        "filePath", False,
    ),
    "qwen": Agent(
        "qwen", "qwen-code-0.24.4",
        {"context": "SessionStart.json", "session-init": "UserPromptSubmit.json",
         "file-context": "PreToolUse.json", "observation": "PostToolUse.json",
         "summarize": "Stop.json", "session-end": "SessionEnd.json"},
        "file_path", False,
    ),
    "kilo": Agent(
        "kilo", "kilo-7.7.7",
        {"context": "session.created.json", "session-init": "chat.message.json",
         "file-context": "tool.execute.before.json", "observation": "tool.execute.after.json",
         "summarize": "session.idle.json", "session-end": "session.deleted.json"},
        "filePath", False,
    ),
    "droid": Agent(
        "droid", "droid-0.225.2",
        {"context": "SessionStart.json", "session-init": "UserPromptSubmit.json",
         "file-context": "PreToolUse.json", "observation": "PostToolUse.json",
         "summarize": "Stop.json", "session-end": "SessionEnd.json"},
        "file_path", False,
    ),
}  # fmt: skip


def post(client: Client, agent: Agent, event: str, data: dict[str, Any]) -> dict[str, Any]:
    resp = client.post(
        f"/api/hooks/{agent.platform}/{event}", json.dumps(data), content_type="application/json"
    )
    assert resp.status_code == 200, resp.content
    return resp.json()


def deny_text(platform: str, answer: dict[str, Any]) -> str:
    if platform == "gemini":
        assert answer["decision"] == "deny"
        return answer["reason"]
    if platform == "copilot":
        assert answer["permissionDecision"] == "deny"
        return answer["permissionDecisionReason"]
    if platform in {"qwen", "droid"}:
        assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
        return answer["hookSpecificOutput"]["permissionDecisionReason"]
    return answer["deny"]


def context_text(platform: str, answer: dict[str, Any]) -> str:
    if platform in {"gemini", "qwen", "droid"}:
        return answer["hookSpecificOutput"]["additionalContext"]
    if platform == "copilot":
        return answer["additionalContext"]
    return answer["context"]


MCP_NAME = {"gemini": "mcp_cmem_get_observations(", "copilot": "cmem-get_observations(",
            "opencode": "cmem_get_observations(", "qwen": "mcp__cmem__get_observations(",
            "kilo": "cmem_get_observations(", "droid": "cmem___get_observations("}  # fmt: skip
READ_TOOL = {
    "gemini": "read_file",
    "copilot": "view",
    "opencode": "read",
    "qwen": "read_file",
    "kilo": "read",
    "droid": "Read",
}


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_two_sessions_observe_then_index_then_refuse(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_COMPRESSOR", "offline")
    agent, client = AGENTS[name], Client()
    root = tmp_path / f"{name}-shop"
    root.mkdir()
    (root / "handlers.py").write_text(BIG)

    first = post(client, agent, "context", agent.payload("context", root, "s-one"))
    assert "No memory of this project yet" in context_text(name, first)
    post(client, agent, "session-init", agent.payload("session-init", root, "s-one"))
    assert post(client, agent, "file-context", agent.payload("file-context", root, "s-one")) == {}
    observed = agent.payload("observation", root, "s-one")
    assert post(client, agent, "observation", observed) == {}
    # A second delivery of the same tool use (a retry, a spool replay) is stored once.
    post(client, agent, "observation", observed)
    assert post(client, agent, "summarize", agent.payload("summarize", root, "s-one")) == {}
    post(client, agent, "session-end", agent.payload("session-end", root, "s-one"))

    session = Session.objects.get(platform=name, session_id="s-one")
    assert session.project == f"{name}-shop"
    events = list(Event.objects.filter(session=session, kind="observation"))
    assert [e.tool_name for e in events] == ["Read"]
    assert [(f["path"], f["role"]) for f in events[0].payload["cmem_files"]] == [
        ("handlers.py", "read")
    ]
    assert Prompt.objects.filter(session=session).count() == 1
    # Compression runs a moment after the commit; in tests, when asked.
    delayed_tasks_run()
    assert ObservationFile.objects.filter(path="handlers.py").exists()

    index = context_text(
        name, post(client, agent, "context", agent.payload("context", root, "s-two"))
    )
    assert "recent context" in index and "handlers.py" in index
    assert MCP_NAME[name].split("(")[0].rsplit("get_observations", 1)[0] in index
    refused = deny_text(
        name, post(client, agent, "file-context", agent.payload("file-context", root, "s-two"))
    )
    assert "Read blocked" in refused
    assert MCP_NAME[name] in refused
    assert f"Call {READ_TOOL[name]} again" in refused
    # The retry the refusal offers goes through.
    assert post(client, agent, "file-context", agent.payload("file-context", root, "s-two")) == {}


def test_gemini_ranged_read_passes_the_gate_and_shell_reads_name_their_files() -> None:
    event = gemini.parse(
        "file-context",
        {"session_id": "s", "tool_name": "read_file",
         "tool_input": {"file_path": "a.py", "start_line": 10, "end_line": 20}},
    )  # fmt: skip
    assert event.tool_name == "Read" and event.tool_input["offset"] == 10
    shell = gemini.parse(
        "observation",
        {"session_id": "s", "tool_name": "run_shell_command", "tool_input": {"command": "cat a.py"},
         "tool_response": {"llmContent": "x", "error": {"message": "boom"}}},
    )  # fmt: skip
    assert (shell.tool_name, shell.tool_files, shell.error) == ("Bash", [("a.py", "read")], "boom")
    assert shell.failed


def test_gemini_never_answers_after_agent_with_a_decision() -> None:
    # AfterAgent `decision: deny` would force Gemini to retry the turn.
    event = gemini.parse(
        "summarize", json.loads((FIXTURES / "gemini-cli-0.61.0/AfterAgent.json").read_text())
    )
    result = HookResult(gate=GateDecision(decision="deny", reason="x"), context="y")
    assert gemini.render(event, result) == {}
    before = gemini.parse("file-context", {"session_id": "s", "tool_name": "read_file"})
    # BeforeTool takes no additionalContext: advice alone is said nowhere rather than wrongly.
    assert gemini.render(before, HookResult(gate=GateDecision(context="advice"))) == {}


def test_copilot_reads_both_payload_spellings_and_string_args() -> None:
    camel = json.loads((FIXTURES / "copilot-cli-1.0.102/postToolUse.json").read_text())
    snake = json.loads(
        (FIXTURES / "copilot-cli-1.0.102/claude-format.PostToolUse.json").read_text()
    )
    a, b = copilot.parse("observation", camel), copilot.parse("observation", snake)
    assert (a.tool_name, b.tool_name) == ("Read", "Read")
    assert a.tool_input["file_path"] == b.tool_input["file_path"]
    assert a.tool_response == b.tool_response
    stringly = copilot.parse(
        "file-context",
        {"sessionId": "s", "toolName": "bash", "toolArgs": '{"command": "cat x.py"}'},
    )
    assert stringly.tool_files == [("x.py", "read")]
    patch = copilot.parse(
        "observation",
        {
            "sessionId": "s",
            "toolName": "apply_patch",
            "toolArgs": "*** Begin Patch\n*** Update File: a.py\n",
        },
    )
    assert patch.tool_files == [("a.py", "modified")]
    failed = copilot.parse(
        "observation",
        {"sessionId": "s", "toolName": "bash", "toolArgs": {},
         "toolResult": {"resultType": "failure", "textResultForLlm": "exit 1"}},
    )  # fmt: skip
    assert failed.failed and failed.hook_event_name == "postToolUseFailure"
    with pytest.raises(HookInputError):
        copilot.parse("observation", {"toolName": "bash"})


def test_copilot_advice_is_context_without_a_permission_decision() -> None:
    event = copilot.parse("file-context", {"sessionId": "s", "toolName": "view"})
    out = copilot.render(
        event,
        HookResult(gate=GateDecision(context="timeline get_observations([1]) get_tool_uses([1])")),
    )
    assert out == {
        "additionalContext": "timeline cmem-get_observations([1]) cmem-get_tool_uses([1])"
    }


def test_opencode_advice_before_a_read_is_handed_to_the_plugin() -> None:
    event = opencode.parse(
        "file-context", {"sessionID": "s", "tool": "read", "args": {"filePath": "/a"}}
    )
    assert event.tool_input == {"file_path": "/a"}
    assert opencode.render(event, HookResult(gate=GateDecision(context="advice"))) == {
        "context": "advice"
    }
    end = HookEvent(platform="opencode", event="summarize", session_id="s")
    assert opencode.render(end, HookResult(context="x")) == {}


def test_qwen_tool_result_turn_stores_no_prompt(tmp_path: Path) -> None:
    # Qwen fires UserPromptSubmit again, empty and without `submitted_prompt`, when the tool
    # results go back to the model: that is no prompt of the user's.
    agent, client = AGENTS["qwen"], Client()
    root = tmp_path / "qwen-shop"
    root.mkdir()
    post(client, agent, "session-init", agent.payload("session-init", root, "s-q"))
    turn = json.loads((FIXTURES / "qwen-code-0.24.4/UserPromptSubmit-tool-turn.json").read_text())
    assert qwen.parse("session-init", turn).tool_turn
    assert (
        post(client, agent, "session-init", {**turn, "cwd": str(root), "session_id": "s-q"}) == {}
    )
    assert [p.text for p in Prompt.objects.filter(session__session_id="s-q")] == [
        "QW-ONE: read handlers.py"
    ]


def test_qwen_ranged_read_passes_and_advice_is_context_without_a_decision() -> None:
    event = qwen.parse(
        "file-context",
        {"session_id": "s", "tool_name": "read_file",
         "tool_input": {"file_path": "/a.py", "offset": 10, "limit": 5}},
    )  # fmt: skip
    assert event.tool_name == "Read" and event.tool_input["offset"] == 10
    out = qwen.render(event, HookResult(gate=GateDecision(context="see get_observations([1])")))
    assert out == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "additionalContext": "see mcp__cmem__get_observations([1])",
        }
    }
    stop = qwen.parse("summarize", {"session_id": "s"})
    assert qwen.render(stop, HookResult(context="x", gate=GateDecision(decision="deny"))) == {}
    failed = qwen.parse(
        "observation",
        {"session_id": "s", "hook_event_name": "PostToolUseFailure", "tool_name": "run_shell_command",
         "tool_input": {"command": "cat a.py"}, "error": "exit 1", "tool_use_id": "t1"},
    )  # fmt: skip
    assert (failed.tool_name, failed.tool_files, failed.error) == (
        "Bash",
        [("a.py", "read")],
        "exit 1",
    )
    assert failed.failed and failed.tool_use_id == "t1"


def test_kilo_is_opencode_under_its_own_platform_name() -> None:
    data = json.loads((FIXTURES / "kilo-7.7.7/tool.execute.before.json").read_text())
    event = kilo.parse("file-context", data)
    assert (event.platform, event.tool_name) == ("kilo", "Read")
    assert event.tool_input == {"file_path": "/home/dev/shop/handlers.py"}
    assert kilo.render(event, HookResult(gate=GateDecision(decision="deny", reason="x"))) == {
        "deny": "x"
    }


def test_droid_derives_a_stable_tool_use_id_and_renames_its_shell_tool() -> None:
    data = json.loads((FIXTURES / "droid-0.225.2/PostToolUse.json").read_text())
    first, again = droid.parse("observation", data), droid.parse("observation", dict(data))
    assert first.tool_use_id and first.tool_use_id == again.tool_use_id
    shell = droid.parse(
        "observation",
        {"session_id": "s", "tool_name": "Execute", "tool_input": {"command": "cat a.py"}},
    )
    assert (shell.tool_name, shell.tool_files) == ("Bash", [("a.py", "read")])
