"""Compression through the real `anthropic` SDK talking HTTP to the fake Messages API."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from memory.compression import health
from memory.compression.prompts import SYSTEM_PROMPT
from memory.compression.tasks import session_events_process_task
from memory.models import Event, Observation, ObservationFile, Summary
from tests.factories import SessionFactory
from tests.fakes import (
    add_event,
    bash_payload,
    edit_payload,
    read_payload,
    write_payload,
)
from tests.fakes.anthropic import FakeAnthropic, Reply

pytestmark = pytest.mark.django_db

KEY = "sk-ant-api03-TESTKEY-abcdefghijklmnop"

GATE_SRC = '''"""The read gate."""


def gate_rows(project, path):
    rows = ObservationFile.objects.filter(project=project, path=path)
    rows = rows.order_by("-created")
    return rows


def gate_decide(event):
    return "allow"
'''


def obs_xml(title: str, uses: str = "1", kind: str = "feature", files_modified: str = "") -> str:
    return (
        f'<observation uses="{uses}"><type>{kind}</type><title>{title}</title>'
        f"<subtitle>sub of {title}</subtitle><facts><fact>fact one</fact><fact> </fact></facts>"
        f"<narrative>narrative of {title}</narrative><concepts><concept>what-changed</concept>"
        f"<concept>{kind}</concept><concept>made-up</concept></concepts>"
        f"<files_read><file>memory/gate.py</file></files_read>"
        f"<files_modified>{files_modified}</files_modified></observation>"
    )


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch):
    with FakeAnthropic() as fake:
        monkeypatch.setenv("CLAUDE_MEM_ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("CLAUDE_MEM_API_BACKOFF_MS", "5")
        monkeypatch.setenv("CLAUDE_MEM_API_TIMEOUT_MS", "3000")
        yield fake


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "demo"
    (root / "memory").mkdir(parents=True)
    (root / "memory" / "gate.py").write_text(GATE_SRC)
    return root


def _edit(session, project: Path) -> Event:
    payload = edit_payload(
        project / "memory" / "gate.py",
        project,
        '    rows = rows.order_by("-created")\n',
        '    # Rank rows by specificity: exact paths first.\n    rows = rows.order_by("-exact", "-created")\n',
    )
    return add_event(session, payload)


def test_edit_becomes_observation_with_contract_fields_and_usage(
    api: FakeAnthropic, project: Path
) -> None:
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    event = _edit(session, project)
    api.script(
        Reply(
            text=obs_xml(
                "Gate ranks exact paths first", files_modified="<file>not/touched.py</file>"
            )
        )
    )

    session_events_process_task(session.pk)

    obs = Observation.objects.get()
    assert obs.type == "feature"
    assert obs.title == "Gate ranks exact paths first"
    assert obs.subtitle and obs.narrative
    assert obs.facts == ["fact one"]
    assert obs.concepts == ["what-changed"]  # type id and unknown concepts dropped
    assert obs.files_modified == ["memory/gate.py"]  # from the tool input, never the model
    assert obs.files_read == ["memory/gate.py"]
    assert obs.tool_name == "Edit" and obs.prompt_number == 1
    assert obs.compressor == "claude-haiku-4-5-20251001"
    usage = api.requests[0].usage
    assert obs.input_tokens == usage["input_tokens"] > 0
    assert obs.cache_write_tokens == usage["cache_creation_input_tokens"] > 0  # the system prompt
    assert obs.output_tokens == usage["output_tokens"]
    modified = ObservationFile.objects.get(observation=obs, role="modified")
    assert modified.path == "memory/gate.py"
    assert modified.content_hash == event.payload["cmem_files"][0]["sha256"] != ""
    event.refresh_from_db()
    assert event.status == Event.Status.DONE and event.attempts == 1 and event.last_error == ""

    body = api.requests[0].body
    assert body["model"] == "claude-haiku-4-5-20251001"
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["system"][0]["text"] == SYSTEM_PROMPT
    assert len(body["messages"]) == 1  # no history resent
    sent = body["messages"][0]["content"]
    assert "Make the gate rank rows by specificity" in sent  # the user's request, as context
    assert '-    rows = rows.order_by("-created")' in sent  # a unified diff…
    assert '+    rows = rows.order_by("-exact", "-created")' in sent
    assert "def gate_decide" not in sent  # …not Claude Code's copy of the whole file
    headers = api.requests[0].headers
    assert KEY in (
        headers.get("x-api-key", ""),
        headers.get("authorization", "").removeprefix("Bearer "),
    )


def test_second_request_reads_the_system_prompt_from_cache(
    api: FakeAnthropic, project: Path
) -> None:
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    _edit(session, project)
    session_events_process_task(session.pk)
    add_event(session, bash_payload("pytest -q", project, stdout="3 passed"))
    session_events_process_task(session.pk)
    first, second = api.requests
    assert first.usage["cache_creation_input_tokens"] > 4096
    assert second.usage["cache_read_input_tokens"] == first.usage["cache_creation_input_tokens"]
    assert second.usage["cache_creation_input_tokens"] == 0


def test_batch_of_tool_uses_gives_several_observations_in_one_request(
    api: FakeAnthropic, project: Path, monkeypatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_BATCH_SIZE", "3")
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    events = [
        add_event(session, read_payload(project / "memory" / "gate.py", project)),
        _edit(session, project),
        add_event(
            session, bash_payload("pytest tests/test_gate.py -q", project, stdout="12 passed")
        ),
        add_event(session, bash_payload("git status", project, stdout="nothing to commit")),
    ]
    api.script(
        Reply(
            text=obs_xml("Gate ranks exact paths", uses="2 3")
            + "\n"
            + obs_xml("Gate module layout", uses="1", kind="discovery")
        ),
        Reply(text=""),  # the second batch holds nothing worth keeping
    )

    session_events_process_task(session.pk)

    assert len(api.requests) == 2  # 4 tool uses, batches of 3
    first_batch = api.requests[0].body["messages"][0]["content"]
    assert first_batch.count("<tool_use ") == 3 and 'tool_uses="3"' in first_batch
    assert "git status" in api.requests[1].body["messages"][0]["content"]
    feature, discovery = Observation.objects.order_by("pk")
    assert feature.files_modified == ["memory/gate.py"] and feature.tool_name == "Edit"
    assert discovery.files_modified == [] and discovery.files_read == ["memory/gate.py"]
    # The first request's usage is split by tool uses covered (2 and 1), adding up exactly.
    usage = api.requests[0].usage
    assert feature.input_tokens + discovery.input_tokens == usage["input_tokens"]
    assert feature.input_tokens > discovery.input_tokens
    assert all(
        e.status == Event.Status.DONE for e in Event.objects.filter(pk__in=[e.pk for e in events])
    )


def test_empty_answer_means_nothing_worth_keeping(api: FakeAnthropic, project: Path) -> None:
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    event = add_event(session, bash_payload("ls", project, stdout="README.md"))
    api.script(Reply(text="   \n"))
    session_events_process_task(session.pk)
    assert Observation.objects.count() == 0
    event.refresh_from_db()
    assert event.status == Event.Status.DONE and event.last_error == ""
    assert health.tokens_used_today() > 0  # the empty answer was still paid for


def test_malformed_answer_gets_one_repair_then_offline(api: FakeAnthropic, project: Path) -> None:
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    event = _edit(session, project)
    api.script(
        Reply(text="Sure! Here is what happened: the gate was changed."),
        Reply(text="<observation><type>feature"),
    )

    session_events_process_task(session.pk)

    assert len(api.requests) == 2
    repair = api.requests[1].body["messages"]
    assert [m["role"] for m in repair] == ["user", "assistant", "user"]
    assert "could not be used" in repair[2]["content"]
    obs = Observation.objects.get()
    assert obs.compressor == "offline"
    assert obs.title.startswith("Edited memory/gate.py: ")
    assert obs.files_modified == ["memory/gate.py"]
    assert obs.input_tokens > 0  # the two wasted requests are still accounted for
    event.refresh_from_db()
    assert event.status == Event.Status.DONE and "unusable model reply" in event.last_error


def test_repair_that_succeeds_is_used(api: FakeAnthropic, project: Path) -> None:
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    _edit(session, project)
    api.script(
        Reply(text="I think nothing"), Reply(text="```xml\n" + obs_xml("Repaired title") + "\n```")
    )
    session_events_process_task(session.pk)
    assert Observation.objects.get().title == "Repaired title"


def test_429_then_success(api: FakeAnthropic, project: Path) -> None:
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    _edit(session, project)
    api.script(
        Reply(status=429, headers={"retry-after": "0"}), Reply(text=obs_xml("After rate limit"))
    )
    session_events_process_task(session.pk)
    assert len(api.requests) == 2
    assert Observation.objects.get().title == "After rate limit"
    assert health.observer_status()["consecutive_failures"] == 0


def test_two_500s_then_success_still_produce_the_observation(
    api: FakeAnthropic, project: Path
) -> None:
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    event = _edit(session, project)
    api.script(Reply(status=500), Reply(status=529), Reply(text=obs_xml("Third time lucky")))
    session_events_process_task(session.pk)
    assert len(api.requests) == 3
    assert Observation.objects.get().title == "Third time lucky"
    event.refresh_from_db()
    assert event.last_error == "" and event.status == Event.Status.DONE


def test_persistent_failures_keep_the_error_fall_back_offline_and_degrade_health(
    api: FakeAnthropic, project: Path, monkeypatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_API_RETRIES", "1")
    api.default = Reply(status=500, error_message=f"upstream exploded for key {KEY}")
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    for i in range(3):
        event = (
            _edit(session, project)
            if not i
            else add_event(
                session, bash_payload(f"pytest -x -k t{i}", project, stdout="boom", exit_code=1)
            )
        )
        session_events_process_task(session.pk)
        event.refresh_from_db()
        assert event.status == Event.Status.DONE
        assert "500" in event.last_error and KEY not in event.last_error
    assert len(api.requests) == 6  # each batch: one try + one retry
    assert Observation.objects.filter(compressor="offline").count() == 3
    line = health.observer_health_line(project="demo")
    assert line.startswith("⚠ cmem memory is degraded") and "500" in line
    assert KEY not in line and "TESTKEY" not in line
    assert "\n" not in line

    # Degraded: for a while batches go straight to offline instead of waiting out retries.
    api.default = Reply(text=obs_xml("Healthy again"))
    add_event(session, bash_payload("pytest -q -k paused", project, stdout="ok"))
    session_events_process_task(session.pk)
    assert len(api.requests) == 6
    assert Observation.objects.order_by("pk").last().compressor == "offline"

    monkeypatch.setattr(health, "PAUSE_SECONDS", 0)  # the pause is over: one batch probes
    add_event(session, bash_payload("pytest -q", project, stdout="ok"))
    session_events_process_task(session.pk)
    assert Observation.objects.order_by("pk").last().title == "Healthy again"
    assert health.observer_health_line() == ""


def test_slow_answer_past_the_timeout_retries_then_succeeds(
    api: FakeAnthropic, project: Path, monkeypatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_API_TIMEOUT_MS", "300")
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    _edit(session, project)
    # The late answer comes after 6 s; the task is done long before it (the margin is the
    # machine's: at load 4 on 2 cores this took 2.4 s when the late answer came at 2 s).
    api.script(Reply(text=obs_xml("Too late"), delay=6.0), Reply(text=obs_xml("In time")))
    started = time.monotonic()
    session_events_process_task(session.pk)
    assert time.monotonic() - started < 5.0
    assert Observation.objects.get().title == "In time"


def test_slow_answers_exhaust_retries_into_offline_with_timeout_error(
    api: FakeAnthropic, project: Path, monkeypatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_API_TIMEOUT_MS", "200")
    monkeypatch.setenv("CLAUDE_MEM_API_RETRIES", "1")
    api.default = Reply(text=obs_xml("never"), delay=1.5)
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    event = _edit(session, project)
    session_events_process_task(session.pk)
    event.refresh_from_db()
    assert "timeout" in event.last_error
    assert Observation.objects.get().compressor == "offline"


def test_caps_secrets_and_private_text_never_reach_the_request(
    api: FakeAnthropic, project: Path, monkeypatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_EXCERPT_CAP", "1000")
    big = project / "memory" / "big.py"
    big.write_text("".join(f"def f{i}():\n    return {i}\n" for i in range(3000)))
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    add_event(session, read_payload(big, project))
    add_event(
        session,
        write_payload(
            project / "memory" / "new.py",
            project,
            "x = 1\n" * 5000 + "<private>my diary</private>\n",
        ),
    )
    add_event(
        session,
        bash_payload(
            "deploy --token ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            project,
            stdout="AWS key AKIAIOSFODNN7EXAMPLE\npassword = hunter2hunter2\n<private>card 4111</private>\n"
            + "log line\n" * 4000,
        ),
    )
    session_events_process_task(session.pk)

    sent = json.dumps(api.requests[0].body)
    message = api.requests[0].body["messages"][0]["content"]
    assert len(message) < 6000  # three tool uses of ~100 KB raw payload
    assert "elided" in message and 'original_size_chars="' in message
    for secret in (
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "AKIAIOSFODNN7EXAMPLE",
        "hunter2hunter2",
        "my diary",
        "card 4111",
        "<private>",
    ):
        assert secret not in sent
    assert "def f0" in message and "def f2999" in message  # head and tail of the read


def test_stop_becomes_a_summary(api: FakeAnthropic, project: Path) -> None:
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    _edit(session, project)
    add_event(
        session,
        {"hook_event_name": "Stop", "last_assistant_message": "Done: rows ranked."},
        kind="summary",
    )
    api.script(
        Reply(text=obs_xml("Gate ranks exact paths first")),
        Reply(
            text="<summary><request>Rank gate rows</request><investigated>gate.py</investigated><learned>x</learned>"
            "<completed>ranking</completed><next_steps>docs</next_steps><notes></notes></summary>"
        ),
    )
    session_events_process_task(session.pk)

    summary = Summary.objects.get()
    assert summary.request == "Rank gate rows" and summary.next_steps == "docs"
    assert summary.input_tokens > 0 and summary.cache_read_tokens > 0  # same cached system prompt
    sent = api.requests[1].body["messages"][0]["content"]
    assert sent.startswith("--- MODE SWITCH: PROGRESS SUMMARY ---")
    assert "Gate ranks exact paths first" in sent and "Done: rows ranked." in sent
    assert not Event.objects.exclude(status=Event.Status.DONE).exists()


def test_skip_summary_stores_none(api: FakeAnthropic, project: Path) -> None:
    session = SessionFactory(root=project, project="demo", prompt="hi")
    add_event(session, {"last_assistant_message": "Hello!"}, kind="summary")
    api.script(Reply(text='<skip_summary reason="greeting"/>'))
    session_events_process_task(session.pk)
    assert Summary.objects.count() == 0
    assert Event.objects.get().status == Event.Status.DONE


def test_budget_spent_falls_back_to_offline_and_says_so(
    api: FakeAnthropic, project: Path, monkeypatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_DAILY_TOKEN_BUDGET", "1000")
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    _edit(session, project)
    api.script(Reply(text=obs_xml("Paid for")))
    session_events_process_task(session.pk)  # this request alone passes the budget
    assert health.budget_spent()
    assert "budget" in health.observer_health_line()

    add_event(session, bash_payload("pytest -q", project, stdout="1 failed", exit_code=1))
    session_events_process_task(session.pk)
    assert len(api.requests) == 1
    assert Observation.objects.order_by("pk").last().compressor == "offline"


def test_fake_streams_messages_the_sdk_can_read(api: FakeAnthropic) -> None:
    """The fake's SSE mode (what agent CLIs use), read by the real SDK's stream helper."""
    import anthropic

    api.script(
        Reply(
            content=[
                {"type": "text", "text": "Using Read."},
                {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/x"}},
            ],
            stop_reason="tool_use",
        )
    )
    client = anthropic.Anthropic(api_key=KEY, base_url=api.url, max_retries=0)
    with client.messages.stream(
        model="claude-haiku-4-5-20251001",
        max_tokens=100,
        messages=[{"role": "user", "content": "read /x"}],
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Using Read."
    assert final.content[1].type == "tool_use" and final.content[1].input == {"file_path": "/x"}
    assert final.stop_reason == "tool_use"
    assert final.usage.input_tokens == len("read /x") // 4 and final.usage.output_tokens >= 1
    assert api.requests[0].body["stream"] is True


def test_answer_cut_off_at_max_tokens_keeps_its_finished_observations(
    api: FakeAnthropic, project: Path
) -> None:
    session = SessionFactory(
        root=project, project="demo", prompt="Make the gate rank rows by specificity"
    )
    _edit(session, project)
    add_event(session, bash_payload("pytest -q", project, stdout="3 passed"))
    api.script(
        Reply(
            text=obs_xml("Finished one")
            + '\n<observation uses="2"><type>discovery</type><title>Torn',
            stop_reason="max_tokens",
        )
    )
    session_events_process_task(session.pk)
    assert len(api.requests) == 1  # no repair needed
    assert [o.title for o in Observation.objects.all()] == ["Finished one"]
