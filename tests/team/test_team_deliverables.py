"""Issue 20 in team mode (PostgreSQL + Redis): deliverable bytes travel from the client.

The shared worker never reads a path a client names, so the hook client sends the bytes:
a `work_state_write` call's files with its PostToolUse, a turn's deliverables with its Stop.
When the shared worker is unreachable, the Stop is spooled on the client with the bytes; the
file is then deleted, and the next hook that gets through forwards it. The session's model,
which prices its tokens in Stats, travels the same way: read from the client's transcript.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import CMEM, LiveWorker, free_port
from tests.support.team import pg_query, run_cmem

pytestmark = pytest.mark.slow


def _hook(
    worker: LiveWorker,
    client_data: Path,
    token: str,
    event: str,
    body: dict[str, Any],
    url: str = "",
) -> subprocess.CompletedProcess[bytes]:
    env = {
        k: v
        for k, v in worker.env.items()
        if k not in {"CLAUDE_MEM_DATABASE_URL", "CLAUDE_MEM_QUEUE_URL", "CLAUDE_MEM_DATA_DIR"}
    }
    env.update(
        CLAUDE_MEM_DATA_DIR=str(client_data),
        CLAUDE_MEM_WORKER_URL=url or worker.url,
        CLAUDE_MEM_API_TOKEN=token,
        CLAUDE_MEM_HOOK_TIMEOUT_MS="3000",
    )
    return subprocess.run(
        [CMEM, "hook", "claude-code", event],
        input=json.dumps(body).encode(),
        env=env,
        capture_output=True,
        timeout=30,
    )


def _transcript(folder: Path, written: Path, attached: Path) -> Path:
    lines = [
        {"type": "user", "message": {"role": "user", "content": "write and attach"}},
        {
            "type": "assistant",
            "message": {
                "content": [
                    {
                        "type": "tool_use",
                        "id": "w1",
                        "name": "Write",
                        "input": {"file_path": str(written), "content": "x"},
                    },
                    {
                        "type": "tool_use",
                        "id": "a1",
                        "name": "mcp__plugin_cmem_cmem__work_state_write",
                        "input": {"paths": [str(attached)], "title": "The chart"},
                    },
                ]
            },
        },
        {
            "type": "user",
            "message": {
                "content": [
                    {"type": "tool_result", "tool_use_id": "w1"},
                    {"type": "tool_result", "tool_use_id": "a1"},
                ]
            },
        },
    ]
    path = folder / "t.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def test_team_deliverables_and_attachments_travel_from_the_client_even_after_an_outage(
    team_worker: LiveWorker, team_env: dict[str, str], tmp_path: Path
) -> None:
    url = team_env["CLAUDE_MEM_DATABASE_URL"]
    token = run_cmem(["token", "create", "carol"], team_env).stdout.strip()
    client_data = tmp_path / "client"
    repo, scratch = tmp_path / "repo", tmp_path / "scratch"
    (repo / ".git").mkdir(parents=True)
    scratch.mkdir()
    base = {"session_id": "team-deliv", "cwd": str(repo)}
    said = _hook(
        team_worker,
        client_data,
        token,
        "session-init",
        {**base, "hook_event_name": "UserPromptSubmit", "prompt": "write and attach"},
    )
    assert said.returncode == 0 and said.stdout == b"{}", said.stderr
    # A live work_state_write call: its PostToolUse carries the bytes.
    slides = scratch / "slides.md"
    slides.write_text("# Slides\n")
    attach = {
        **base,
        "hook_event_name": "PostToolUse",
        "tool_name": "mcp__cmem__work_state_write",
        "tool_input": {"paths": [str(slides)], "title": "Deck", "note": "draft"},
        "tool_response": [{"type": "text", "text": "will be attached"}],
        "tool_use_id": "tu-team-attach",
    }
    done = _hook(team_worker, client_data, token, "observation", attach)
    assert done.returncode == 0 and done.stdout == b"{}", done.stderr
    # The shared worker is unreachable at Stop: spooled on the client, bytes included.
    notes, chart = scratch / "NOTES.md", scratch / "chart.svg"
    notes.write_text("# Notes\n")
    chart.write_text("<svg/>\n")
    stop = {
        **base,
        "hook_event_name": "Stop",
        "transcript_path": str(_transcript(tmp_path, notes, chart)),
        "stop_hook_active": False,
    }
    down = _hook(
        team_worker, client_data, token, "summarize", stop, url=f"http://127.0.0.1:{free_port()}"
    )
    assert down.returncode == 0 and b"saved to the spool" in down.stderr, down.stderr
    [spooled] = list((client_data / "spool").glob("*.summarize.hook"))
    assert "cmem_handover" in json.loads(spooled.read_bytes())
    notes.unlink()
    chart.unlink()
    # The next hook that gets through forwards the spooled Stop.
    again = _hook(team_worker, client_data, token, "session-end", {**base, "reason": "exit"})
    assert again.returncode == 0, again.stderr
    assert not list((client_data / "spool").glob("*.hook"))
    rows = pg_query(
        url,
        "SELECT original_path, attached, title, stored_path FROM deliverables_deliverable "
        "ORDER BY original_path",
    )
    by_name = {Path(r[0]).name: r for r in rows}
    assert set(by_name) == {"NOTES.md", "chart.svg", "slides.md"}
    assert by_name["slides.md"][1:3] == (True, "Deck")
    assert by_name["chart.svg"][1:3] == (True, "The chart")
    assert by_name["NOTES.md"][1] is False
    stored = team_worker.data_dir / "deliverables" / by_name["NOTES.md"][3]
    assert stored.read_text() == "# Notes\n"


def test_team_sessions_are_priced_at_the_model_the_clients_transcript_names(
    team_worker: LiveWorker, team_env: dict[str, str], tmp_path: Path
) -> None:
    url = team_env["CLAUDE_MEM_DATABASE_URL"]
    token = run_cmem(["token", "create", "dora"], team_env).stdout.strip()
    client_data = tmp_path / "client"
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    transcript = tmp_path / "dora.jsonl"

    def say(model: str) -> None:
        transcript.write_text(
            json.dumps({"type": "user", "message": {"content": "go"}})
            + "\n"
            + json.dumps({"type": "assistant", "message": {"model": model, "content": []}})
            + "\n"
        )

    base = {"session_id": "team-model", "cwd": str(repo), "transcript_path": str(transcript)}
    init = {**base, "hook_event_name": "UserPromptSubmit", "prompt": "price me"}
    assert _hook(team_worker, client_data, token, "session-init", init).returncode == 0
    say("claude-sonnet-5-5")
    stop = {**base, "hook_event_name": "Stop", "stop_hook_active": False}
    done = _hook(team_worker, client_data, token, "summarize", stop)
    assert done.returncode == 0 and done.stdout == b"{}", done.stderr
    model = "SELECT model FROM memory_session WHERE session_id = 'team-model'"
    assert pg_query(url, model) == [("claude-sonnet-5-5",)]
    # A hostile claim is no model name: the session keeps what it had.
    say('<img src=x onerror="alert(1)">')
    assert _hook(team_worker, client_data, token, "summarize", stop).returncode == 0
    end = {**base, "hook_event_name": "SessionEnd", "reason": "exit", "cmem_model": "x" * 500}
    assert _hook(team_worker, client_data, token, "session-end", end).returncode == 0
    assert pg_query(url, model) == [("claude-sonnet-5-5",)]
