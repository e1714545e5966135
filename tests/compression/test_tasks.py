"""The compression queue: atomic claims, reclaiming, sweeps, and exactly-once across a kill -9."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from memory.compression import pipeline
from memory.compression.tasks import events_sweep, session_events_process_task
from memory.models import Event, Observation, Summary
from tests.factories import SessionFactory
from tests.fakes import add_event, bash_payload
from tests.fakes.anthropic import FakeAnthropic, Reply
from tests.support import CMEM, free_port, make_worker_env

KEY = "sk-ant-api03-TASKS-abcdefghijklmnop"


def echo_observations(body: dict[str, Any], *, delay: float = 0.0) -> Reply:
    """One observation per tool use in the request, titled after the command it ran."""
    message = body["messages"][0]["content"]
    blocks = []
    for n, marker in re.findall(r'<tool_use n="(\d+)".*?(tool-\d+)', message, re.S):
        blocks.append(
            f'<observation uses="{n}"><type>discovery</type><title>obs of {marker}</title>'
            f"<narrative>ran {marker}</narrative><concepts><concept>how-it-works</concept></concepts></observation>"
        )
    return Reply(text="\n".join(blocks), delay=delay)


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch):
    with FakeAnthropic(default=Reply(fn=echo_observations)) as fake:
        monkeypatch.setenv("CLAUDE_MEM_ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("CLAUDE_MEM_API_BACKOFF_MS", "5")
        yield fake


@pytest.mark.django_db
def test_claim_takes_pending_events_once_and_counts_the_attempt(tmp_path: Path) -> None:
    session = SessionFactory(
        root=tmp_path, project="demo", prompt="Make the gate rank rows by specificity"
    )
    events = [
        add_event(session, bash_payload(f"echo tool-{i}", tmp_path, stdout="x")) for i in range(5)
    ]
    first, stamp = pipeline.events_claim(session_pk=session.pk, kind="observation", limit=3)
    second, _ = pipeline.events_claim(session_pk=session.pk, kind="observation", limit=3)
    third, _ = pipeline.events_claim(session_pk=session.pk, kind="observation", limit=3)
    assert [e.pk for e in first] == [e.pk for e in events[:3]]
    assert [e.pk for e in second] == [e.pk for e in events[3:]]
    assert third == []
    assert all(
        e.status == Event.Status.CLAIMED and e.attempts == 1 and e.claimed_at == stamp
        for e in first
    )


@pytest.mark.django_db
def test_stale_claims_are_reclaimed_and_a_late_result_is_dropped(
    api: FakeAnthropic, tmp_path: Path
) -> None:
    session = SessionFactory(
        root=tmp_path, project="demo", prompt="Make the gate rank rows by specificity"
    )
    events = [
        add_event(session, bash_payload(f"echo tool-{i}", tmp_path, stdout="x")) for i in range(2)
    ]
    claimed, stale_stamp = pipeline.events_claim(
        session_pk=session.pk, kind="observation", limit=10
    )
    # The consumer holding the claim vanished: after the timeout the events go back.
    assert pipeline.events_reclaim_stale(older_than_seconds=0) == [session.pk]
    assert Event.objects.filter(status=Event.Status.PENDING).count() == 2
    session_events_process_task(session.pk)
    assert Observation.objects.count() == 2
    # The first consumer comes back with its (late) answer: its claim is gone, nothing is stored.
    report = pipeline._guarded(
        pipeline.observations_compress, session=session, events=claimed, stamp=stale_stamp
    )
    assert report.observations == 0
    assert Observation.objects.count() == 2
    assert {e.attempts for e in Event.objects.filter(pk__in=[e.pk for e in events])} == {2}


@pytest.mark.django_db
def test_sweep_enqueues_sessions_whose_task_was_lost(api: FakeAnthropic, tmp_path: Path) -> None:
    session = SessionFactory(
        root=tmp_path, project="demo", prompt="Make the gate rank rows by specificity"
    )
    add_event(session, bash_payload("echo tool-1", tmp_path, stdout="x"))
    assert events_sweep(pending_older_than_seconds=0) == [session.pk]
    assert Observation.objects.get().title == "obs of tool-1"
    assert events_sweep(pending_older_than_seconds=0) == []


@pytest.mark.django_db
def test_a_batch_that_keeps_killing_its_consumer_goes_offline(
    api: FakeAnthropic, tmp_path: Path
) -> None:
    session = SessionFactory(
        root=tmp_path, project="demo", prompt="Make the gate rank rows by specificity"
    )
    event = add_event(session, bash_payload("echo tool-1", tmp_path, stdout="x"))
    Event.objects.filter(pk=event.pk).update(attempts=pipeline.MAX_API_ATTEMPTS)
    session_events_process_task(session.pk)
    assert api.requests == []
    assert Observation.objects.get().compressor == "offline"


@pytest.mark.django_db
def test_summary_waits_for_earlier_observations_held_elsewhere(
    api: FakeAnthropic, tmp_path: Path
) -> None:
    session = SessionFactory(
        root=tmp_path, project="demo", prompt="Make the gate rank rows by specificity"
    )
    add_event(session, bash_payload("echo tool-1", tmp_path, stdout="x"))
    add_event(session, {"last_assistant_message": "done"}, kind="summary")
    held, stamp = pipeline.events_claim(session_pk=session.pk, kind="observation", limit=10)
    session_events_process_task(session.pk)  # another consumer: must not summarise yet
    assert Summary.objects.count() == 0
    assert Event.objects.get(kind="summary").status == Event.Status.PENDING
    api.script(
        Reply(fn=echo_observations),
        Reply(text="<summary><request>r</request><completed>c</completed></summary>"),
    )
    pipeline._guarded(pipeline.observations_compress, session=session, events=held, stamp=stamp)
    session_events_process_task(session.pk)
    assert Summary.objects.get().request == "r"


@pytest.mark.django_db
def test_unexpected_error_marks_events_failed_instead_of_looping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = SessionFactory(
        root=tmp_path, project="demo", prompt="Make the gate rank rows by specificity"
    )
    event = add_event(session, bash_payload("echo tool-1", tmp_path, stdout="x"))

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(pipeline.offline, "observations_for_batch", broken)
    session_events_process_task(session.pk)
    event.refresh_from_db()
    assert event.status == Event.Status.FAILED and "RuntimeError: boom" in event.last_error


# -- exactly once across a kill -9 of a real consumer ----------------------------------------
def _cmem(env: dict[str, str], *args: str, timeout: float = 120) -> str:
    done = subprocess.run([CMEM, *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db, timeout=10) as conn:
        return conn.execute(sql).fetchall()


def _wait(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
def test_consumer_killed_mid_batch_compresses_every_event_exactly_once(tmp_path: Path) -> None:
    data = tmp_path / "live"
    data.mkdir(mode=0o700)
    fake = FakeAnthropic(default=Reply(fn=echo_observations)).start()
    # The first request is held far past the kill; every later one is answered at once.
    fake.script(Reply(fn=lambda body: echo_observations(body, delay=120)))
    env = make_worker_env(
        data,
        free_port(),
        CLAUDE_MEM_ANTHROPIC_BASE_URL=fake.url,
        ANTHROPIC_API_KEY=KEY,
        CLAUDE_MEM_BATCH_SIZE="2",
        CLAUDE_MEM_CLAIM_TIMEOUT_SECONDS="2",
        CLAUDE_MEM_API_TIMEOUT_MS="300000",
        CLAUDE_MEM_API_BACKOFF_MS="10",
    )
    consumers: list[subprocess.Popen[bytes]] = []

    def start_consumer() -> subprocess.Popen[bytes]:
        with open(data / f"consumer{len(consumers)}.log", "wb") as log:
            proc = subprocess.Popen(
                [CMEM, "manage", "run_huey", "--quiet"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        consumers.append(proc)
        return proc

    try:
        _cmem(env, "migrate", "--verbosity", "0")
        payloads = [
            bash_payload(f"echo tool-{i}", tmp_path, stdout=f"tool-{i} ran") for i in range(5)
        ]
        (tmp_path / "payloads.json").write_text(json.dumps(payloads))
        _cmem(
            env,
            "manage",
            "shell",
            "-c",
            "import json\n"
            "from memory.models import Session, Event\n"
            f"s = Session.objects.create(session_id='kill-test', project='demo', project_root={str(tmp_path)!r}, cwd={str(tmp_path)!r})\n"
            f"for p in json.load(open({str(tmp_path / 'payloads.json')!r})):\n"
            "    Event.objects.create(session=s, kind='observation', tool_name='Bash', tool_use_id=p['tool_use_id'], payload=p)\n",
        )
        db = data / "cmem.sqlite3"

        first = start_consumer()  # its start-up sweep enqueues the session
        assert fake.wait_for_requests(1, timeout=90), (data / "consumer0.log").read_text()[-2000:]
        assert _rows(db, "select count(*) from memory_event where status='claimed'") == [(2,)]
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        assert _rows(db, "select count(*) from memory_event where status='done'") == [(0,)]
        assert _rows(db, "select count(*) from memory_observation") == [(0,)]

        time.sleep(2.5)  # past CLAUDE_MEM_CLAIM_TIMEOUT_SECONDS
        start_consumer()
        _wait(
            lambda: _rows(db, "select count(*) from memory_event where status='done'") == [(5,)],
            120,
            "all events done",
        )

        titles = [t for (t,) in _rows(db, "select title from memory_observation order by id")]
        assert sorted(titles) == [f"obs of tool-{i}" for i in range(5)]  # each exactly once
        attempts = dict(_rows(db, "select tool_use_id, attempts from memory_event"))
        assert sorted(attempts.values()) == [1, 1, 1, 2, 2]  # the killed batch was claimed twice
        sent = [r.body["messages"][0]["content"] for r in fake.requests]
        assert (
            sum("echo tool-0" in s for s in sent) == 2
            and sum("echo tool-4" in s for s in sent) == 1
        )
    finally:
        for proc in consumers:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        fake.stop()


_CLAIM_LOOP = """
import json, pathlib, time
from memory.compression.pipeline import events_claim
events_claim(session_pk=0, kind="observation", limit=1)  # warm up: connection, imports
barrier = pathlib.Path({barrier!r})
(barrier / "{name}").touch()
deadline = time.time() + 120
while len(list(barrier.iterdir())) < 2 and time.time() < deadline:
    time.sleep(0.01)
taken = []
while True:
    events, _ = events_claim(session_pk={session}, kind="observation", limit=1)
    if not events:
        break
    taken += [e.pk for e in events]
    time.sleep(0.003)  # the compression work between two claims
print(json.dumps(taken))
"""


@pytest.mark.slow
def test_two_consumer_processes_never_claim_the_same_event(tmp_path: Path) -> None:
    data = tmp_path / "race"
    data.mkdir(mode=0o700)
    env = make_worker_env(data, free_port())
    _cmem(env, "migrate", "--verbosity", "0")
    _cmem(
        env,
        "manage",
        "shell",
        "-c",
        "from memory.models import Session, Event\n"
        "s = Session.objects.create(session_id='race', project='demo')\n"
        "Event.objects.bulk_create([Event(session=s, kind='observation', tool_name='Bash', payload={}) for _ in range(300)])\n",
    )
    (session_pk,) = _rows(data / "cmem.sqlite3", "select id from memory_session")[0]
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    procs = [
        subprocess.Popen(
            [
                CMEM,
                "manage",
                "shell",
                "-c",
                _CLAIM_LOOP.format(barrier=str(barrier), name=f"p{i}", session=session_pk),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(2)
    ]
    try:
        outputs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            p.kill()  # a no-op for one that finished
            p.wait()
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outputs]
    first, second = (json.loads(o[0].strip().splitlines()[-1]) for o in outputs)
    assert first and second  # both really competed
    assert not set(first) & set(second)
    assert len(first) + len(second) == 300


@pytest.mark.slow
def test_hooks_to_observation_and_summary_through_a_real_worker(tmp_path: Path) -> None:
    """UserPromptSubmit, an Edit and a Stop through `cmem hook` into a real `cmem serve`,
    compressed by its consumer with the SDK against the fake API."""
    from tests.support import CLAUDE_FIXTURES, LiveWorker

    project = tmp_path / "demo"
    project.mkdir()
    (project / "gate.py").write_text("def gate():\n    return 'allow'\n")
    data = tmp_path / "worker-data"
    data.mkdir(mode=0o700)
    fake = FakeAnthropic(default=Reply(fn=echo_observations)).start()
    fake.script(
        Reply(
            text='<observation uses="1"><type>change</type><title>Gate denies by default</title>'
            "<narrative>gate() returns deny.</narrative></observation>"
        ),
        Reply(
            text="<summary><request>Make the gate deny</request><completed>gate() denies</completed></summary>"
        ),
    )
    port = free_port()
    worker = LiveWorker(
        data_dir=data,
        port=port,
        env=make_worker_env(
            data, port, CLAUDE_MEM_ANTHROPIC_BASE_URL=fake.url, ANTHROPIC_API_KEY=KEY
        ),
    )
    try:
        worker.start(timeout=90)  # inside: the fake API stops even if the worker does not start

        def hook(event: str, fixture: str, **changes: Any) -> None:
            payload = json.loads((CLAUDE_FIXTURES / fixture).read_text())
            payload.update(session_id="live-1", cwd=str(project), **changes)
            done = worker.run_hook(event, json.dumps(payload).encode(), timeout=30)
            assert done.returncode == 0 and not done.stderr, done.stderr

        hook("session-init", "UserPromptSubmit.json", prompt="Make the gate deny by default")
        (project / "gate.py").write_text("def gate():\n    return 'deny'\n")
        hook(
            "observation",
            "PostToolUse.json",
            tool_name="Edit",
            tool_input={
                "file_path": str(project / "gate.py"),
                "old_string": "'allow'",
                "new_string": "'deny'",
            },
            tool_response={
                "filePath": str(project / "gate.py"),
                "originalFile": "def gate():\n    return 'allow'\n",
            },
        )
        hook("summarize", "Stop.json", last_assistant_message="The gate now denies.")
        db = data / "cmem.sqlite3"
        _wait(lambda: _rows(db, "select count(*) from memory_summary") == [(1,)], 90, "the summary")
        assert _rows(db, "select title, files_modified, compressor from memory_observation") == [
            ("Gate denies by default", '["gate.py"]', "claude-haiku-4-5-20251001")
        ]
        assert _rows(db, "select path, role from memory_observationfile") == [
            ("gate.py", "modified")
        ]
        assert _rows(db, "select request from memory_summary") == [("Make the gate deny",)]
        assert _rows(db, "select count(*) from memory_event where status != 'done'") == [(0,)]
        sent = fake.requests[0].body["messages"][0]["content"]
        assert "Make the gate deny by default" in sent and "-'allow'\n+'deny'" in sent
    finally:
        worker.stop()
        fake.stop()


def test_merged_tasks_keep_the_names_huey_registered_them_by() -> None:
    """A queued message names its task "<module>.<class>"; the merge into memory/tasks.py
    must not orphan messages queued before an upgrade."""
    from huey.contrib.djhuey import HUEY

    from memory import tasks

    names = {
        HUEY._registry.task_to_string(t.task_class)
        for t in (
            tasks.session_events_process_task,
            tasks.events_sweep_task,
            tasks.spool_ingest_task,
            tasks.spool_ingest_periodic_task,
            tasks.retention_task,
        )
    }
    assert names == {
        "memory.tasks.session_events_process_task",
        "memory.tasks.events_sweep_task",
        "memory.spool_tasks.spool_ingest_task",
        "memory.spool_tasks.spool_ingest_periodic_task",
        "memory.retention_tasks.retention_task",
    }
