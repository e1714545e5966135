"""Issue 19: background work in the serving process gives way to the requests in flight
(memory/runtime/foreground.py): the consumer's tasks, each compression batch and the
outline parse wait while a hook or a search runs, a bounded time, and a request's own
thread never waits on itself."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from memory.runtime import foreground


@pytest.fixture
def request_in_flight() -> Iterator[threading.Event]:
    """A request running on another thread until the returned event is set."""
    done = threading.Event()
    entered = threading.Event()

    def serve() -> None:
        with foreground.foreground():
            entered.set()
            done.wait(10)

    thread = threading.Thread(target=serve)
    thread.start()
    entered.wait(5)
    yield done
    done.set()
    thread.join(5)


def test_background_work_waits_for_the_request_and_a_moment_after_it(request_in_flight) -> None:
    waited: list[float] = []
    worker = threading.Thread(target=lambda: waited.append(_timed(foreground.quiet_wait)))
    worker.start()
    time.sleep(0.15)
    assert worker.is_alive()  # still waiting: the request runs
    ended = time.monotonic()
    request_in_flight.set()
    worker.join(5)
    assert waited and waited[0] >= 0.15
    assert time.monotonic() - ended >= foreground.QUIET_S * 0.9


def test_a_steady_stream_of_requests_still_lets_it_through(request_in_flight, monkeypatch) -> None:
    monkeypatch.setattr(foreground, "WAIT_MAX_S", 0.2)
    assert 0.2 <= _timed(foreground.quiet_wait) < 2  # never quiet, so it waits WAIT_MAX_S


def test_a_request_s_own_thread_never_waits(request_in_flight) -> None:
    # HUEY immediate mode runs a task inside the request: it must not wait on the request.
    with foreground.foreground():
        assert _timed(foreground.quiet_wait) < 0.05


def test_nothing_in_flight_means_no_wait() -> None:
    time.sleep(foreground.QUIET_S)
    assert _timed(foreground.quiet_wait) < 0.05


def test_the_in_process_consumer_s_tasks_start_after_the_requests(request_in_flight) -> None:
    from huey.contrib.djhuey import HUEY

    from memory.worker.inprocess_consumer import QUIET_HOOK, InProcessConsumer

    consumer = InProcessConsumer()
    try:
        hook = HUEY._pre_execute[QUIET_HOOK]
        started = threading.Thread(target=hook, args=(None,))
        started.start()
        time.sleep(0.1)
        assert started.is_alive()  # the task has not begun: a request is in flight
        request_in_flight.set()
        started.join(5)
        assert not started.is_alive()
    finally:
        assert consumer.huey is HUEY
        HUEY.unregister_pre_execute(QUIET_HOOK)  # what stop() does (its threads never ran here)


@pytest.mark.django_db
def test_a_compression_run_gives_way_before_each_batch(tmp_path, monkeypatch) -> None:
    from memory.compression import pipeline
    from memory.models import Event
    from tests.factories import SessionFactory
    from tests.fakes import add_event, bash_payload

    monkeypatch.setenv("CLAUDE_MEM_COMPRESSOR", "offline")
    monkeypatch.setenv("CLAUDE_MEM_BATCH_SIZE", "2")
    session = SessionFactory(root=tmp_path, project="demo", prompt="Rank rows by specificity")
    for i in range(5):
        add_event(session, bash_payload(f"echo tool-{i}", tmp_path, stdout="x"))
    pending: list[int] = []

    def record() -> None:  # what is still waiting each time the run gives way
        pending.append(Event.objects.filter(session=session, status=Event.Status.PENDING).count())

    monkeypatch.setattr(pipeline, "quiet_wait", record)
    pipeline.session_events_process(session_pk=session.pk)
    # Before each of the three batches (2, 2, 1) and before the claim that finds none left.
    assert pending == [5, 3, 1, 0]
    assert not Event.objects.filter(session=session, status=Event.Status.PENDING).exists()


def _timed(fn: object) -> float:
    started = time.monotonic()
    fn()  # type: ignore[operator]
    return time.monotonic() - started


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "builder"),
    [
        ("/api/search?q=checkout", "memory.api.retrieval.search_body"),
        ("/api/observations?ids=1", "memory.api.retrieval.observations_body"),
        ("/api/observations/by-file?path=a.py&project=p", "memory.api.insights.by_file_body"),
        ("/api/health", "memory.api.core.health_body"),
    ],
)
def test_the_reads_a_caller_waits_on_run_in_the_foreground(
    client, monkeypatch: pytest.MonkeyPatch, path: str, builder: str
) -> None:
    """Through Django's handler, as the hot lane did before it was removed: while a search,
    observations, a file's observations or health are built, background work waits."""
    seen: list[int] = []
    module, name = builder.rsplit(".", 1)
    real = getattr(__import__(module, fromlist=[name]), name)

    def recording(*args: object, **kwargs: object) -> object:
        seen.append(foreground._busy[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(builder, recording)
    assert client.get(path).status_code == 200
    assert seen and seen[0] >= 1
    assert foreground._busy[0] == 0
