"""The seam between the apps (memory/extensions.py): memory never imports deliverables, and
what it shows and does of them (stats, the session page, exports, the copy at Stop) goes
through what `DeliverablesConfig.ready()` registers."""

from __future__ import annotations

import ast
import json
import logging
from pathlib import Path

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from deliverables.models import Deliverable
from deliverables.session_part import on_tool_recorded, on_turn_finished, tool_recorded_wanted
from memory import extensions
from memory.agents.base import HookEvent
from memory.importers.json_io import memory_export, memory_import
from memory.importers.report import ImportReport
from memory.models import Event, Session
from tests.browser.seed import make_deliverable, make_prompt
from tests.factories import SessionFactory

pytestmark = pytest.mark.django_db

MEMORY = Path(__file__).resolve().parents[2] / "memory"


def _imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_memory_never_imports_deliverables() -> None:
    offenders = sorted(
        f"{path.relative_to(MEMORY.parent)}: {name}"
        for path in MEMORY.rglob("*.py")
        for name in _imported_modules(path)
        if name == "deliverables" or name.startswith("deliverables.")
    )
    assert offenders == []
    # The scan does see imports: memory's own modules import memory.
    assert "memory.hooks.spool" in _imported_modules(MEMORY / "services.py")


def test_deliverables_plug_in_at_startup() -> None:
    assert [part.name for part in extensions.session_parts()] == ["deliverables"]
    assert on_turn_finished in extensions._turn_finished


def test_stats_count_deliverables_through_the_seam(client: Client) -> None:
    shop = SessionFactory(project="shop", root="/home/dev/projects/demo", session_id="s-shop")
    blog = SessionFactory(project="blog", root="/home/dev/projects/demo", session_id="s-blog")
    make_deliverable(shop, make_prompt(shop, "notes"), "a.md", b"# a")
    make_deliverable(shop, None, "b.txt", b"b")
    make_deliverable(blog, make_prompt(blog, "post"), "c.md", b"# c")
    assert client.get("/api/stats").json()["deliverables"] == 3
    assert client.get("/api/stats", {"project": "shop"}).json()["deliverables"] == 2
    assert extensions.session_part_count("no-such-part") == 0


def test_session_page_shows_each_turns_deliverables(client: Client) -> None:
    session = SessionFactory(project="demo", root="/home/dev/projects/demo", session_id="s-page")
    first = make_prompt(session, "write the notes")
    second = make_prompt(session, "draw the chart")
    notes = make_deliverable(session, first, "NOTES.md", b"# notes")
    chart = make_deliverable(session, second, "chart.png", b"\x89PNG")
    body = client.get(reverse("memory-session-detail", args=[session.pk])).content.decode()
    turn_one = body[body.index("Prompt #1") : body.index("Prompt #2")]
    turn_two = body[body.index("Prompt #2") :]
    assert reverse("deliverables-download", args=[notes.pk]) in turn_one
    assert reverse("deliverables-download", args=[chart.pk]) not in turn_one
    assert reverse("deliverables-download", args=[chart.pk]) in turn_two
    assert 'class="deliv-line"' in turn_two and "chart.png" in turn_two


def test_export_and_import_carry_deliverables_through_the_seam() -> None:
    session = SessionFactory(project="demo", root="/home/dev/projects/demo", session_id="s-export")
    prompt = make_prompt(session, "ship it")
    made = make_deliverable(session, prompt, "REPORT.md", b"# report")
    document = json.loads(json.dumps(memory_export()))
    [row] = document["sessions"][0]["deliverables"]
    assert (row["original_path"], row["sha256"], row["prompt_number"]) == (
        made.original_path,
        made.sha256,
        1,
    )
    Session.objects.all().delete()
    report = ImportReport()
    memory_import(document=document, report=report)
    back = Deliverable.objects.get()
    assert (back.original_path, back.sha256, back.prompt.number if back.prompt else None) == (
        made.original_path,
        made.sha256,
        1,
    )
    again = ImportReport()
    memory_import(document=document, report=again)  # idempotent
    assert Deliverable.objects.count() == 1


def test_a_failing_receiver_is_rolled_back_and_logged_and_stop_still_answers(
    client: Client, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []

    def broken(*, session: Session, event: HookEvent) -> None:
        calls.append(event.hook_event_name)
        Deliverable.objects.create(
            session=session,
            project=session.project,
            original_path="/x",
            stored_path="x",
            size=1,
            sha256="0" * 64,
        )
        raise RuntimeError("receiver broke")

    extensions.turn_finished_connect(broken)
    try:
        base = {"session_id": "seam-sid", "cwd": str(tmp_path), "transcript_path": ""}
        for event, payload in [
            ("session-init", {"hook_event_name": "UserPromptSubmit", "prompt": "hello"}),
            (
                "summarize",
                {
                    "hook_event_name": "Stop",
                    "stop_hook_active": False,
                    "last_assistant_message": "ok",
                },
            ),
        ]:
            with caplog.at_level(logging.ERROR, logger="memory.extensions"):
                resp = client.post(
                    f"/api/hooks/claude-code/{event}",
                    data=json.dumps({**base, **payload}),
                    content_type="application/json",
                )
            assert resp.status_code == 200, resp.content
    finally:
        extensions.turn_finished_disconnect(broken)
    assert calls == ["Stop"]
    assert Event.objects.filter(kind=Event.Kind.SUMMARY).count() == 1  # the Stop's contract
    assert not Deliverable.objects.filter(original_path="/x").exists()  # its savepoint rolled back
    assert "receiver broke" in caplog.text


def test_a_tool_use_goes_only_to_the_receivers_that_want_it_and_costs_no_savepoint_otherwise(
    client: Client, tmp_path: Path
) -> None:
    assert extensions._tool_recorded[on_tool_recorded] is tool_recorded_wanted
    seen: list[str] = []

    def picky(*, session: Session, event: HookEvent) -> None:
        seen.append(event.tool_name)

    extensions.tool_recorded_connect(picky, wants=lambda event: event.tool_name == "Grep")
    try:
        savepoints: list[int] = []
        tools = ["Bash", "Bash", "Grep", "mcp__plugin_cmem_cmem__work_state_write"]
        for n, tool in enumerate(tools):  # the first makes the session
            body = {
                "session_id": "seam-tools",
                "cwd": str(tmp_path),
                "hook_event_name": "PostToolUse",
                "tool_name": tool,
                "tool_input": {"command": "ls"},
                "tool_response": "ok",
                "tool_use_id": f"toolu_{n}",
            }
            with CaptureQueriesContext(connection) as queries:
                resp = client.post(
                    "/api/hooks/claude-code/observation",
                    data=json.dumps(body),
                    content_type="application/json",
                )
            assert resp.status_code == 200, resp.content
            sql = [q["sql"] for q in queries.captured_queries]
            savepoints.append(sum(s.startswith("SAVEPOINT") for s in sql))
    finally:
        extensions.tool_recorded_disconnect(picky)
    # Grep goes to picky, work_state_write to deliverables: a savepoint each; Bash to nobody.
    assert savepoints[2] == savepoints[3] == savepoints[1] + 1
    assert seen == ["Grep"]
    assert Event.objects.filter(session__session_id="seam-tools").count() == 4
    assert not tool_recorded_wanted(
        HookEvent(platform="claude-code", event="observation", session_id="s", tool_name="Bash")
    )
