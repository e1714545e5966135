"""Issue 15 §5: a clock that jumps never strands queued work, and future-dated rows do not
sort as newest forever."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import time_machine

from memory.compression import pipeline
from memory.compression.tasks import events_sweep_task
from memory.models import Event, Observation
from tests.compression.test_tasks import KEY, echo_observations
from tests.factories import SessionFactory
from tests.fakes import add_event, bash_payload
from tests.fakes.anthropic import FakeAnthropic, Reply

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Any:
    with FakeAnthropic(default=Reply(fn=echo_observations)) as fake:
        monkeypatch.setenv("CLAUDE_MEM_ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("CLAUDE_MEM_API_BACKOFF_MS", "5")
        yield fake


@pytest.mark.slow  # about 30 s: out of `make test-quick`
def test_events_dated_hours_ahead_are_swept_and_processed(
    api: FakeAnthropic, tmp_path: Path
) -> None:
    session = SessionFactory(root=tmp_path, project="demo", prompt="fix the clock")
    # Written while the clock ran three hours ahead; their own tasks were lost (a crash).
    with time_machine.travel(NOW + timedelta(hours=3), tick=False):
        events = [
            add_event(session, bash_payload(f"echo tool-{i}", tmp_path, stdout="x"))
            for i in range(2)
        ]
    with time_machine.travel(NOW, tick=False):
        # The old rule alone would not see them for three hours.
        assert pipeline.sessions_with_pending_events(older_than_seconds=60) == []
        events_sweep_task()  # the periodic sweep, exactly as huey runs it
        assert Observation.objects.count() == 2
        assert set(
            Event.objects.filter(pk__in=[e.pk for e in events]).values_list("status", flat=True)
        ) == {Event.Status.DONE}
        # Nothing is dated in the future any more: memory written now sorts after it.
        assert not Observation.objects.filter(created__gt=NOW).exists()
        assert not Event.objects.filter(created__gt=NOW).exists()


def test_a_claim_stamped_in_the_future_is_handed_back(api: FakeAnthropic, tmp_path: Path) -> None:
    session = SessionFactory(root=tmp_path, project="demo", prompt="fix the clock")
    with time_machine.travel(NOW + timedelta(hours=2), tick=False):
        add_event(session, bash_payload("echo tool-7", tmp_path, stdout="x"))
        claimed, _stamp = pipeline.events_claim(
            session_pk=session.pk, kind=Event.Kind.OBSERVATION, limit=5
        )
        assert len(claimed) == 1
    with time_machine.travel(NOW, tick=False):
        # Its consumer died; the claim is "from the future" and would never look stale.
        assert pipeline.events_reclaim_stale(older_than_seconds=300) == []
        events_sweep_task()
        assert Observation.objects.count() == 1


def test_future_dated_observations_do_not_stay_newest(api: FakeAnthropic, tmp_path: Path) -> None:
    session = SessionFactory(root=tmp_path, project="demo", prompt="fix the clock")
    with time_machine.travel(NOW + timedelta(hours=5), tick=False):
        ahead = Observation.objects.create(session=session, project="demo", title="from the future")
    with time_machine.travel(NOW, tick=False):
        events_sweep_task()
    with time_machine.travel(NOW + timedelta(minutes=1), tick=False):
        later = Observation.objects.create(session=session, project="demo", title="written later")
        newest = Observation.objects.order_by("-created", "-pk").first()
        assert newest is not None and newest.pk == later.pk
        ahead.refresh_from_db()
        assert ahead.created == NOW
