"""Correcting a memory through the real observation page: Chromium (Playwright) against a
real `cmem serve`, logged in with the one-time link as `cmem open` does."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from tests.browser.test_web import ARGS, CHROMIUM, _page, _seed, _shot
from tests.browser.test_web import pytestmark as pytestmark  # browser, slow, needs Chromium
from tests.support import LiveWorker


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            yield instance
        finally:
            instance.close()


def _row(worker: LiveWorker, pk: int) -> dict[str, Any]:
    """The row as the worker stored it, read from its own database file."""
    db = sqlite3.connect(worker.data_dir / "cmem.sqlite3")
    db.row_factory = sqlite3.Row
    try:
        row = db.execute(
            "select title, narrative, facts, pinned, person_edited from memory_observation"
            " where id = ?",
            (pk,),
        ).fetchone()
        revisions = [
            r[0]
            for r in db.execute(
                "select action from memory_observationrevision where observation_id = ?"
                " order by id",
                (pk,),
            )
        ]
    finally:
        db.close()
    return {**dict(row), "revisions": revisions}


def test_edit_a_memory_and_pin_it_in_the_browser(live_worker: LiveWorker, browser: Any) -> None:
    ids = _seed(live_worker, "demo")
    pk = ids["observations"][0]
    page = _page(browser, live_worker)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    page.goto(f"{live_worker.url}/observations/{pk}/")
    page.get_by_role("heading", level=1, name="Checkout total rounded before tax").wait_for()

    # Edit: open the form, change the title and the facts, save.
    page.get_by_text("Edit the text…").click()
    page.get_by_label("Title", exact=True).fill("Checkout rounds after tax, once")
    page.get_by_label("Facts", exact=True).fill(
        "shop/checkout.py rounds the total once\nround() runs last"
    )
    page.get_by_label("Why this edit (optional)").fill("fixed in the rounding PR")
    page.get_by_role("button", name="Save").click()
    page.get_by_text(f"Saved #{pk}.").wait_for()
    page.get_by_role("heading", level=1, name="Checkout rounds after tax, once").wait_for()
    assert page.locator("#obs-tags").get_by_text("corrected").is_visible()

    # Pin it.
    page.get_by_role("button", name="Pin", exact=True).click()
    page.get_by_text(f"Pinned #{pk}").wait_for()
    assert page.get_by_role("button", name="Unpin").is_visible()
    assert page.locator("#obs-tags").get_by_text("pinned", exact=True).is_visible()

    # Both are in the history, by a person, each with an Undo.
    history = page.locator("#history")
    assert history.get_by_text("edited it").is_visible()
    assert history.get_by_text("pinned it").is_visible()
    assert history.get_by_text("fixed in the rounding PR").is_visible()
    assert history.get_by_role("button", name="Undo").count() == 2
    _shot(page, "observation-curated-1280.png")

    stored = _row(live_worker, pk)
    assert stored["title"] == "Checkout rounds after tax, once"
    assert stored["facts"] == '["shop/checkout.py rounds the total once", "round() runs last"]'
    assert stored["pinned"] == 1 and stored["person_edited"] == 1
    assert stored["revisions"] == ["edit", "pin"]

    # Undo the edit from the page: the old title is back, the pin stays.
    history.get_by_role("button", name="Undo").first.click()
    page.get_by_role("heading", level=1, name="Checkout total rounded before tax").wait_for()
    stored = _row(live_worker, pk)
    assert stored["title"] == "Checkout total rounded before tax" and stored["pinned"] == 1
    assert errors == []
    page.context.close()
