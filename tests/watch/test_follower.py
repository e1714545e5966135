"""The follower of session files (memory/watch/follower.py) with a recording poster: offsets
kept per file, nothing delivered twice, nothing lost when the process dies between a post
and the state write, rewritten / truncated / broken / huge files, bounded passes.

The worker's side (one prompt, tool use and turn end stored once when an item is posted
again) is tests/watch/test_watch_worker.py, with a real worker and a real kill -9."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memory.watch import follower
from memory.watch.follower import WorkerUnavailable, follow_pass, source_for
from tests.watch.sessions import answer, tool, turn, user, write_session


class Poster:
    """Records what was posted; `down` makes the worker unreachable."""

    def __init__(self) -> None:
        self.posted: list[tuple[str, str]] = []  # (event, key)
        self.down = False

    def __call__(self, platform: str, event: str, payload: dict[str, Any]) -> tuple[bool, str]:
        assert platform == "continue"
        if self.down:
            raise WorkerUnavailable("worker not running")
        key = payload.get("tool_use_id") or payload.get("prompt_id") or payload.get("prompt")
        self.posted.append((event, str(key)))
        return True, ""


@pytest.fixture
def sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CONTINUE_GLOBAL_DIR", str(tmp_path / "continue"))
    return tmp_path / "continue" / "sessions"


def run(post: Poster, **kwargs: Any) -> follower.PassReport:
    return follow_pass(source_for("continue"), post=post, **kwargs)


def test_a_turn_becomes_prompt_tool_use_and_turn_end_once(sessions: Path) -> None:
    write_session(sessions, "s1", "/work/shop", turn(1, "/work/shop"))
    (sessions / "sessions.json").write_text("[]")  # Continue's index: not a session
    post = Poster()
    report = run(post)
    assert [e for e, _ in post.posted] == ["session-init", "observation", "summarize"]
    assert post.posted[1][1] == "continue:s1:call_1"
    assert (report.events, report.items, report.files) == (3, 3, 1)
    assert run(post).events == 0  # unchanged file: nothing again
    assert len(post.posted) == 3


def test_the_payloads_are_what_a_hook_sends(sessions: Path) -> None:
    write_session(sessions, "s1", "/work/shop", turn(1, "/work/shop"))
    seen: list[tuple[str, dict[str, Any]]] = []
    follow_pass(
        source_for("continue"), post=lambda p, e, body: seen.append((e, body)) or (True, "")
    )
    prompt, observation, stop = (body for _, body in seen)
    assert prompt["prompt"] == "prompt number 1: read handlers.py"
    assert prompt["cwd"] == "/work/shop" and prompt["session_id"] == "s1"
    assert observation["tool_name"] == "Read"
    assert observation["tool_input"] == {"filepath": "handlers.py"}
    assert observation["tool_response"] == "Content of handlers.py: 1"
    assert stop["last_assistant_message"] == "Read it (1)." and stop["prompt_id"].startswith(
        "continue:s1:"
    )


def test_a_growing_file_delivers_only_its_new_items(sessions: Path) -> None:
    history = turn(1, "/w")
    write_session(sessions, "s1", "/w", history)
    post = Poster()
    run(post)
    history += turn(2, "/w")
    write_session(sessions, "s1", "/w", history, age_s=30)
    report = run(post)
    assert report.events == 3
    assert [e for e, _ in post.posted][3:] == ["session-init", "observation", "summarize"]
    assert [k for _, k in post.posted][3:5] == [
        "prompt number 2: read handlers.py", "continue:s1:call_2",
    ]  # fmt: skip


def test_a_tool_call_still_running_is_waited_for(sessions: Path) -> None:
    history = [user("go"), tool("c1", "Bash", {"command": "sleep 9"}, "", status="calling")]
    write_session(sessions, "s1", "/w", history)
    post = Poster()
    run(post)
    assert [e for e, _ in post.posted] == ["session-init"]
    history[1] = tool("c1", "Bash", {"command": "sleep 9"}, "slept")
    write_session(sessions, "s1", "/w", [*history, answer("done")], age_s=30)
    run(post)
    assert [e for e, _ in post.posted] == ["session-init", "observation", "summarize"]


def test_a_failed_tool_call_is_posted_with_its_error(sessions: Path) -> None:
    history = [
        user("go"),
        tool("c1", "Read", {"filepath": "nope.py"}, "File does not exist", status="errored"),
    ]
    write_session(sessions, "s1", "/w", history)
    seen: list[dict[str, Any]] = []
    follow_pass(source_for("continue"), post=lambda p, e, body: seen.append(body) or (True, ""))
    assert seen[1]["error"] == "File does not exist"


def test_the_last_answer_of_a_file_just_written_waits_to_settle(sessions: Path) -> None:
    write_session(sessions, "s1", "/w", turn(1, "/w"), age_s=0)
    post = Poster()
    run(post, settle_s=30)
    assert [e for e, _ in post.posted] == ["session-init", "observation"]
    run(post, settle_s=0)
    assert [e for e, _ in post.posted] == ["session-init", "observation", "summarize"]


class Killed(BaseException):
    """What kill -9 does to the process: nothing after it runs."""


@pytest.mark.parametrize("kill_at", [1, 2, 3, 5, 8])
def test_killed_between_a_post_and_the_state_write_loses_nothing_and_repeats_one_item(
    sessions: Path, monkeypatch: pytest.MonkeyPatch, kill_at: int
) -> None:
    history = turn(1, "/w") + turn(2, "/w") + turn(3, "/w")
    write_session(sessions, "s1", "/w", history)
    post = Poster()
    real_save = follower.save_state
    calls = {"n": 0}

    def dying_save(agent: str, state: dict[str, Any]) -> None:
        calls["n"] += 1
        if calls["n"] == kill_at:
            raise Killed  # the item's events were accepted; the state says they were not
        real_save(agent, state)

    monkeypatch.setattr(follower, "save_state", dying_save)
    with pytest.raises(Killed):
        run(post)
    monkeypatch.setattr(follower, "save_state", real_save)
    run(post)  # the restarted watcher
    keys = Counter(post.posted)
    # every event of the 9 items is there
    assert Counter(e for e, _ in keys) == {"session-init": 3, "observation": 3, "summarize": 3}
    repeated = [key for key, n in keys.items() if n > 1]
    assert repeated == [post.posted[kill_at - 1]]  # only the item whose state write died
    assert run(post).events == 0


def test_a_worker_that_is_down_keeps_the_state_where_it_was(sessions: Path) -> None:
    write_session(sessions, "s1", "/w", turn(1, "/w"))
    post = Poster()
    post.down = True
    with pytest.raises(WorkerUnavailable):
        run(post)
    post.down = False
    run(post)
    assert len(post.posted) == 3


def test_a_rewritten_history_delivers_new_items_never_old_ones(sessions: Path) -> None:
    history = turn(1, "/w") + turn(2, "/w")
    write_session(sessions, "s1", "/w", history)
    post = Poster()
    run(post)
    # The user went back to turn 1 and asked something else: turn 2 is gone, turn 3 is new.
    rewritten = turn(1, "/w") + turn(3, "/w")
    write_session(sessions, "s1", "/w", rewritten, age_s=30)
    run(post)
    assert [k for _, k in post.posted][6:8] == [
        "prompt number 3: read handlers.py", "continue:s1:call_3",
    ]  # fmt: skip
    assert len(post.posted) == 9
    # Truncated to its first turn: nothing to deliver, nothing delivered again.
    write_session(sessions, "s1", "/w", turn(1, "/w"), age_s=20)
    assert run(post).events == 0
    # A compacted history (the old items moved behind a new first one): only the new one.
    write_session(sessions, "s1", "/w", [user("summary of before"), *rewritten], age_s=10)
    run(post)
    assert [k for _, k in post.posted][9:] == ["summary of before"]


def test_garbage_is_skipped_with_a_message_until_it_changes(sessions: Path) -> None:
    sessions.mkdir(parents=True)
    (sessions / "broken.json").write_text('{"sessionId": "x", "history": [')
    (sessions / "other.json").write_text(json.dumps({"not": "a session"}))
    write_session(sessions, "s1", "/w", turn(1, "/w"))
    for path in (sessions / "broken.json", sessions / "other.json"):
        import os

        os.utime(path, (path.stat().st_mtime - 60,) * 2)
    post = Poster()
    report = run(post)
    assert report.events == 3  # the good file is read all the same
    assert len(report.messages) == 2
    assert all("not a readable session" in m for m in report.messages)
    assert run(post).messages == []  # said once, not on every pass
    write_session(sessions, "broken", "/w", turn(7, "/w"))  # fixed: read now
    assert run(post).events == 3


def test_a_file_just_being_written_is_retried_quietly(sessions: Path) -> None:
    sessions.mkdir(parents=True)
    (sessions / "s1.json").write_text('{"sessionId": "s1", "hist')  # cn writes in place
    post = Poster()
    assert run(post).messages == []
    write_session(sessions, "s1", "/w", turn(1, "/w"))
    assert run(post).events == 3


def test_a_huge_file_is_skipped_not_read(sessions: Path) -> None:
    write_session(sessions, "big", "/w", [user("x" * 5000)] * 50)
    write_session(sessions, "s1", "/w", turn(1, "/w"))
    post = Poster()
    report = run(post, max_bytes=100_000)
    assert report.events == 3
    assert len(report.messages) == 1 and "over the 100,000 cmem reads" in report.messages[0]
    assert run(post, max_bytes=100_000).messages == []


def test_a_pass_is_bounded_and_the_next_one_goes_on(sessions: Path) -> None:
    for n in range(4):
        write_session(sessions, f"s{n}", "/w", turn(n, "/w"))
    post = Poster()
    passes = 0
    while True:
        passes += 1
        report = run(post, max_events=4)
        assert report.events <= 4
        if not report.more:
            break
    assert passes >= 3
    assert len(post.posted) == 12 == len(set(post.posted))


def test_an_unreadable_state_stops_instead_of_delivering_everything_again(sessions: Path) -> None:
    write_session(sessions, "s1", "/w", turn(1, "/w"))
    state = follower.state_path("continue")
    state.parent.mkdir(parents=True)
    state.write_text("{garbage")
    with pytest.raises(follower.WatchError, match="move it away"):
        run(Poster())


def test_the_same_prompt_twice_is_two_prompts_and_a_turn_end_keeps_its_key_when_moved(
    sessions: Path,
) -> None:
    history = [user("continue"), answer("ok"), user("continue"), answer("ok")]
    write_session(sessions, "s1", "/w", history)
    post = Poster()
    run(post)
    assert [e for e, _ in post.posted] == ["session-init", "summarize"] * 2
    stops = [k for e, k in post.posted if e == "summarize"]
    assert len(set(stops)) == 2
    # Moved one place down by a rewrite: the worker would find its key taken anyway.
    seen: list[dict[str, Any]] = []
    write_session(sessions, "s2", "/w", [user("before"), *history])
    follow_pass(source_for("continue"), post=lambda p, e, body: seen.append(body) or (True, ""))
    assert [b["prompt_id"] for b in seen if "prompt_id" in b] == [
        k.replace("s1", "s2") for k in stops
    ]


def test_sessions_written_before_watching_began_count_as_read_and_grow_from_there(
    sessions: Path,
) -> None:
    old = write_session(sessions, "old", "/w", turn(1, "/w"), age_s=600)
    state = follower.state_path("continue")
    state.parent.mkdir(parents=True)
    # As `cmem install --continue` leaves it (memory/agents/install/continue_cli.py).
    state.write_text(json.dumps({"version": 1, "files": {}, "since": time.time_ns() - 60 * 10**9}))
    write_session(sessions, "new", "/w", turn(2, "/w"), age_s=30)
    post = Poster()
    run(post)
    assert [k for e, k in post.posted if e == "session-init"] == [
        "prompt number 2: read handlers.py"
    ]
    # The old session goes on after the install: only its new turn is delivered.
    write_session(sessions, "old", "/w", turn(1, "/w") + turn(3, "/w"), age_s=5)
    assert old.exists()
    run(post)
    assert [k for e, k in post.posted if e == "session-init"] == [
        "prompt number 2: read handlers.py", "prompt number 3: read handlers.py",
    ]  # fmt: skip


def test_the_offsets_of_deleted_sessions_are_dropped(sessions: Path) -> None:
    gone = write_session(sessions, "gone", "/w", turn(1, "/w"))
    write_session(sessions, "kept", "/w", turn(2, "/w"))
    run(Poster())
    gone.unlink()
    run(Poster())
    assert set(json.loads(follower.state_path("continue").read_text())["files"]) == {"kept.json"}
