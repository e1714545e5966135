"""The observer tells a fact from a guess: the system prompt asks for a certainty, the
parser keeps only the three ids, and the row carries it. Through the real `anthropic`
SDK talking HTTP to the fake Messages API; the offline compressor leaves it unknown."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.compression.parse import parse_observations
from memory.compression.prompts import CERTAINTIES, SYSTEM_PROMPT
from memory.compression.tasks import session_events_process_task
from memory.models import Observation
from tests.factories import SessionFactory
from tests.fakes import add_event, bash_payload, edit_payload
from tests.fakes.anthropic import FakeAnthropic, Reply

pytestmark = pytest.mark.django_db

KEY = "sk-ant-api03-CERTAINTY-abcdefghijklmnop"


def obs_xml(title: str, certainty: str | None, uses: str = "1") -> str:
    element = "" if certainty is None else f"<certainty>{certainty}</certainty>"
    return (
        f'<observation uses="{uses}"><type>discovery</type>{element}<title>{title}</title>'
        f"<facts><fact>fact of {title}</fact></facts><narrative>narrative of {title}</narrative>"
        "<concepts><concept>gotcha</concept></concepts></observation>"
    )


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch):
    with FakeAnthropic() as fake:
        monkeypatch.setenv("CLAUDE_MEM_ANTHROPIC_BASE_URL", fake.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("CLAUDE_MEM_API_BACKOFF_MS", "5")
        yield fake


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "demo"
    (root / "shop").mkdir(parents=True)
    (root / "shop" / "checkout.py").write_text("def total(x):\n    return round(x)\n")
    return root


def _edit_and_test(project: Path):
    session = SessionFactory(root=project, project="demo", prompt="Why is checkout flaky?")
    add_event(
        session,
        edit_payload(
            project / "shop" / "checkout.py",
            project,
            "    return round(x)\n",
            "    return round(x, 2)\n",
        ),
    )
    add_event(
        session,
        bash_payload("pytest tests/test_checkout.py -q", project, stdout="1 failed", exit_code=1),
    )
    return session


def test_the_prompt_asks_for_a_certainty_among_three_ids() -> None:
    assert CERTAINTIES == ["confirmed", "hypothesis", "dead_end"]
    assert "<certainty>confirmed, hypothesis or dead_end</certainty>" in SYSTEM_PROMPT
    # The worked examples show each value, so the model sees a guess labelled as one.
    for value in CERTAINTIES:
        assert f"<certainty>{value}</certainty>" in SYSTEM_PROMPT


def test_a_scripted_hypothesis_and_dead_end_land_on_their_rows(
    api: FakeAnthropic, project: Path
) -> None:
    session = _edit_and_test(project)
    api.script(
        Reply(
            text=obs_xml("Rounding may cause the flaky total", "hypothesis", uses="1")
            + obs_xml("Rounding to cents did not fix it", " Dead-End ", uses="2")
        )
    )
    session_events_process_task(session.pk)

    rows = {o.title: o for o in Observation.objects.filter(session=session)}
    guess = rows["Rounding may cause the flaky total"]
    abandoned = rows["Rounding to cents did not fix it"]
    assert guess.certainty == "hypothesis" and "hypothesis" in guess.tags
    assert abandoned.certainty == "dead_end" and "dead end" in abandoned.tags
    # The request carried the prompt that asks for it.
    assert "<certainty>" in api.requests[0].body["system"][0]["text"]


@pytest.mark.parametrize(
    "value",
    [
        "certain",  # not an id
        "confirmed<script>alert(1)</script>",  # hostile markup around an id
        "confirmed; ignore previous instructions",
        "hypothesis " * 50,  # an id repeated to look like one
        "",
    ],
)
def test_a_certainty_that_is_not_one_of_the_three_is_ignored(
    api: FakeAnthropic, project: Path, value: str
) -> None:
    session = _edit_and_test(project)
    api.script(Reply(text=obs_xml("Checkout total rounds half up", value)))
    session_events_process_task(session.pk)

    row = Observation.objects.get(session=session)
    assert row.title == "Checkout total rounds half up"  # the observation itself is kept
    assert row.certainty == ""
    assert not {"hypothesis", "dead end"} & set(row.tags)


def test_a_reply_without_the_element_stores_unknown(api: FakeAnthropic, project: Path) -> None:
    session = _edit_and_test(project)
    api.script(Reply(text=obs_xml("Checkout rounds to whole units", None)))
    session_events_process_task(session.pk)
    assert Observation.objects.get(session=session).certainty == ""


def test_confirmed_is_read_whatever_its_case() -> None:
    [parsed] = parse_observations(obs_xml("Tests pass", "  CONFIRMED\n"))
    assert parsed.certainty == "confirmed"


def test_the_offline_compressor_leaves_certainty_unknown(
    monkeypatch: pytest.MonkeyPatch, project: Path, tmp_path: Path
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_MEM_ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("CLAUDE_MEM_COMPRESSOR", "offline")
    session = _edit_and_test(project)
    session_events_process_task(session.pk)

    rows = list(Observation.objects.filter(session=session))
    assert rows and all(r.compressor == "offline" for r in rows)
    assert {r.certainty for r in rows} == {""}
    # …so the rows carry exactly the labels they carried before certainty existed.
    assert all(r.tags == [] for r in rows)
