"""Issue 33: the sentence encoder runs in a child process of its own (started on first use,
ended when idle, started again after a crash), so the serving process never holds ONNX
Runtime; a search whose encoder cannot answer falls back to keyword and says why."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memory.models import Observation, Session
from memory.retrieval import embeddings
from memory.retrieval.embeddings import encoder, model, store, transformer
from memory.retrieval.embeddings.encoder import ChildEncoder, EncoderError
from memory.retrieval.search import hybrid
from memory.retrieval.search.query import SearchQuery
from memory.retrieval.search.service import effective_mode, mode_note, search

TEXTS = [
    "Redis connection pool exhausted under load",
    "",
    "Refunds reuse compute_total() so partial refunds match checkout",
    "naïve café: ünïcödé and CJK 東京 text",
]


@pytest.fixture(autouse=True)
def _search_by_meaning_back_on() -> Iterator[None]:
    yield
    embeddings.clear_unavailable(encoder.UNAVAILABLE_KEY)


@pytest.fixture
def child() -> Iterator[ChildEncoder]:
    made = ChildEncoder("", transformer.VERSION)
    yield made
    made.close()


def _gone(pid: int, within: float = 10.0) -> bool:
    """The process has exited (and, for our own child, been reaped)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":  # exited, its parent not yet told
            return True
        time.sleep(0.05)
    return False


def test_the_child_starts_on_first_use_and_answers_the_in_process_vectors(
    child: ChildEncoder,
) -> None:
    assert child.pid() is None  # nothing runs before a text needs a vector
    vectors = child.encode(TEXTS)
    assert child.pid() is not None and child.pid() != os.getpid()
    assert child.version == transformer.VERSION and child.dim == 384
    expected = transformer.load().embed(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (len(TEXTS), 384)
    assert np.array_equal(vectors, expected)  # bit for bit: same model, same code, one text a call
    assert not vectors[1].any()  # an empty text: a zero vector, as in process
    assert child.encode([]).shape == (0, 384)


def test_more_texts_than_a_piece_come_back_in_order(child: ChildEncoder) -> None:
    texts = [f"observation number {n} about the checkout" for n in range(encoder.PIECE * 2 + 3)]
    together = child.encode(texts)
    one_by_one = np.concatenate([child.encode([text]) for text in texts])
    assert np.array_equal(together, one_by_one)


def test_closing_ends_the_child_and_the_next_use_starts_another(child: ChildEncoder) -> None:
    first = child.encode(TEXTS[:1])
    pid = child.pid()
    assert pid is not None
    child.close()
    assert child.pid() is None and _gone(pid)
    again = child.encode(TEXTS[:1])
    assert child.pid() not in (None, pid)
    assert np.array_equal(again, first)


def test_a_killed_child_is_started_again_on_the_next_use(child: ChildEncoder) -> None:
    first = child.encode(TEXTS[:1])
    pid = child.pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert _gone(pid)
    assert np.array_equal(child.encode(TEXTS[:1]), first)
    assert child.pid() not in (None, pid)


def test_a_child_killed_during_a_request_is_replaced_and_asked_again(
    child: ChildEncoder,
) -> None:
    expected = child.encode(TEXTS[:1])
    pid = child.pid()
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)  # it will not answer ...
    killer = threading.Timer(0.3, os.kill, (pid, signal.SIGKILL))  # ... and then dies
    killer.start()
    try:
        assert np.array_equal(child.encode(TEXTS[:1]), expected)
    finally:
        killer.join()
    assert child.pid() not in (None, pid)


def test_a_child_that_does_not_answer_is_killed_after_the_timeout(
    child: ChildEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(encoder, "REPLY_SECONDS", 0.5)
    child.encode(TEXTS[:1])
    pid = child.pid()
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    started = time.monotonic()
    with pytest.raises(EncoderError, match="no answer within"):
        child.encode(["hung"])
    assert time.monotonic() - started < 5
    assert _gone(pid) and child.pid() is None  # killed, not left stopped
    assert child.encode(["works again"]).any()


def test_concurrent_requests_from_several_threads_each_get_their_own_vectors(
    child: ChildEncoder,
) -> None:
    texts = [f"thread {n}: the webhook retried the payment twice" for n in range(12)]
    expected = {text: child.encode([text]) for text in texts}
    got: dict[str, np.ndarray] = {}
    errors: list[BaseException] = []

    def one(text: str) -> None:
        try:
            for _ in range(3):
                got[text] = child.encode([text, text])[1:]
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(text,)) for text in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    assert all(np.array_equal(got[text], expected[text]) for text in texts)


def test_the_child_dies_with_its_parent_even_by_kill_9(tmp_path: Path) -> None:
    """A parent killed with -9 closes no pipe politely and runs no cleanup: the child
    notices its parent is gone and exits on its own; no encoder is left behind."""
    script = textwrap.dedent(
        """
        import sys, time
        from memory.retrieval.embeddings.encoder import ChildEncoder
        from memory.retrieval.embeddings import transformer
        child = ChildEncoder("", transformer.VERSION)
        child.encode(["hello"])
        print(child.pid(), flush=True)
        time.sleep(600)
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        assert Path(f"/proc/{pid}").exists()
        assert "encoder_child" in Path(f"/proc/{pid}/cmdline").read_text()
    finally:
        parent.kill()
        parent.wait(10)
    assert _gone(pid, within=10)


def test_the_child_imports_no_django() -> None:
    script = (
        "import sys; from memory.retrieval.embeddings import encoder_child as c; "
        "c._load(''); print(sorted({m.split('.')[0] for m in sys.modules} & {'django', 'huey'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]"


# -- through search ------------------------------------------------------------------------


@pytest.fixture
def stored_rows() -> Iterator[dict[str, int]]:
    session = Session.objects.create(session_id="s-enc", project="shop")
    rows = {
        "redis": Observation.objects.create(
            session=session, project="shop", title="Redis connection pool exhausted under load"
        ).pk,
        "refunds": Observation.objects.create(
            session=session, project="shop", title="Refunds reuse compute_total()"
        ).pk,
    }
    store.embed_pending()
    yield rows


@pytest.mark.django_db
def test_a_search_whose_encoder_hangs_answers_by_keyword_and_says_so(
    stored_rows: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(encoder, "REPLY_SECONDS", 0.5)
    monkeypatch.setattr(encoder, "RETRY_SECONDS", 1.0)
    running = model.get_model()
    running.embed(["warm"])
    pid = running.pid()
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    query = SearchQuery(text="redis pool", mode="hybrid")
    started = time.monotonic()
    hits = search(query)
    assert time.monotonic() - started < 5  # bounded by the timeout, not a hang
    assert [hit.id for hit in hits] == [stored_rows["redis"]]  # the keyword answer
    note = mode_note(query.mode, query.kinds)
    assert "did not answer" in note and "answers by keyword" in note
    assert effective_mode(query.mode) == "keyword"
    assert hybrid._remembered(query.text) is None  # no zero vector kept for the text
    assert _gone(pid)
    # Meanwhile searches answer by keyword at once, saying why, without asking the encoder.
    started = time.monotonic()
    assert [hit.id for hit in search(query)] == [stored_rows["redis"]]
    assert time.monotonic() - started < 0.5 and running.pid() is None
    assert "did not answer" in mode_note(query.mode, query.kinds)
    time.sleep(1.1)
    # Then the next search starts a new encoder and searches by meaning again, saying nothing.
    hits = search(SearchQuery(text="the cache server ran out of connections", mode="semantic"))
    assert hits and hits[0].id == stored_rows["redis"]
    assert mode_note("semantic") == "" and effective_mode("hybrid") == "hybrid"
    assert running.pid() not in (None, pid)


@pytest.mark.django_db
def test_rows_are_never_stored_with_a_zero_vector_when_the_encoder_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    session = Session.objects.create(session_id="s-enc2", project="shop")
    pk = Observation.objects.create(session=session, project="shop", title="Coupon expiry").pk

    def fail(self: ChildEncoder, texts: list[str]) -> np.ndarray:
        raise EncoderError("no answer within 0 s")

    monkeypatch.setattr(ChildEncoder, "encode", fail)
    with pytest.raises(EncoderError):
        store.embed_rows("observation", [pk])
    assert store.pending_ids("observation", model.model_version(), limit=10) == [pk]


def test_the_idle_watch_ends_every_encoder_it_sees_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """Started, ended when idle, started again: the watch (which stops once no encoder
    runs) is there again for the second one."""
    monkeypatch.setenv(model.IDLE_SETTING, "1")
    model.unload_if_idle(0)
    for _ in range(2):
        model.get_model().embed(["coupon expiry"])
        pid = model.get_model().pid()
        assert pid is not None
        deadline = time.monotonic() + 15
        while model.loaded() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not model.loaded() and _gone(pid)
