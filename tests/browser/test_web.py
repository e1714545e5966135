"""The web app in a real browser (Debian's Chromium through Playwright) against a real
`cmem serve`. Screenshots land in test-artifacts/screenshots/."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import REPO, LiveWorker, owner_open

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = REPO / "test-artifacts" / "screenshots"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="/usr/bin/chromium is missing (apt-get install chromium)"
    ),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            yield instance
        finally:
            instance.close()


def _page(browser: Any, worker: LiveWorker, width: int = 1280, height: int = 900) -> Any:
    """A page logged in as the owner, the way `cmem open` does it (a one-time link)."""
    from memory.runtime.credentials import owner_login_url

    context = browser.new_context(
        viewport={"width": width, "height": height}, accept_downloads=True
    )
    context.set_default_timeout(15_000)
    page = context.new_page()
    page.goto(owner_login_url(worker.url, "/", data_dir=worker.data_dir))
    return page


def _shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / name), full_page=True)


def _seed(worker: LiveWorker, *args: str) -> dict[str, Any]:
    """Rows written through the ORM into the worker's own database."""
    out = subprocess.run(
        [sys.executable, "-m", "tests.browser.seed", *args],
        env=worker.env,
        cwd=REPO,
        capture_output=True,
        timeout=60,
        check=True,
    )
    return json.loads(out.stdout.decode().strip().splitlines()[-1])


def test_timeline_filter_detail_my_work_download_and_live(
    live_worker: LiveWorker, browser: Any
) -> None:
    ids = _seed(live_worker, "demo")
    page = _page(browser, live_worker)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    # Timeline.
    page.goto(live_worker.url + "/")
    page.get_by_role("link", name="Checkout total rounded before tax").wait_for()
    assert page.get_by_role("link", name="Login hashes the password twice").is_visible()
    _shot(page, "timeline-1280.png")

    # Filter by project.
    page.get_by_label("Project").select_option("api-server")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**/?*project=api-server*")
    assert page.get_by_role("link", name="Login hashes the password twice").is_visible()
    assert page.get_by_role("link", name="Checkout total rounded before tax").count() == 0

    # Open an observation.
    page.get_by_role("link", name="Login hashes the password twice").click()
    page.get_by_role("heading", level=1, name="Login hashes the password twice").wait_for()
    # Forget it, after a confirmation step (a CSRF-protected POST).
    page.get_by_role("link", name="Forget…").click()
    page.get_by_role("heading", name="Forget this observation?").wait_for()
    page.get_by_role("button", name="Forget it").click()
    page.get_by_text("Forgot observation").wait_for()
    assert page.get_by_role("link", name="Login hashes the password twice").count() == 0

    # My Work: the request card and its deliverables.
    page.get_by_role("link", name="My Work").click()
    card = page.locator(f"#request-{ids['prompts'][0]}")
    card.get_by_text("Fix the checkout rounding bug").wait_for()
    assert card.get_by_text("Rounding happens after tax now.").is_visible()
    card.locator(f"#deliverable-{ids['deliverables']['md']} summary").click()
    assert card.locator(".markdown strong").inner_text() == "Rounding"
    card.locator(f"#deliverable-{ids['deliverables']['html']} summary").click()
    frame = page.frame_locator(f"#deliverable-{ids['deliverables']['html']} iframe")
    assert frame.locator("h1").inner_text() == "Report"
    _shot(page, "my-work-1280.png")

    # Download and compare bytes.
    with page.expect_download() as info:
        card.get_by_role("link", name="Download notes.txt").click()
    download = info.value
    assert download.suggested_filename == "notes.txt"
    assert Path(download.path()).read_bytes() == b"plain notes\nline two\n"

    # Live: a new observation appears on the open timeline without a reload, in its
    # session's block (test_live_rows_slot_into_their_day_and_session covers the order).
    page.goto(live_worker.url + "/")
    page.evaluate("window.__notReloaded = true")
    page.locator("#live-status").get_by_text("Live").wait_for()
    _seed(live_worker, "observation", "Cart total cached per session")
    block = page.locator(f".block[data-session='{ids['sessions'][0]}']")
    block.get_by_role("link", name="Cart total cached per session").wait_for(timeout=20_000)
    assert page.evaluate("window.__notReloaded") is True
    _shot(page, "timeline-live-1280.png")
    assert errors == []
    page.context.close()


DOC_SHOTS = REPO / "docs" / "screenshots"
DOC_WIDTHS = (1400, 420)  # the web app guide's screenshots (docs/screenshots/) are taken at these


@pytest.mark.parametrize("width", [1280, 390, *DOC_WIDTHS])
def test_pages_fit_the_screen(live_worker: LiveWorker, browser: Any, width: int) -> None:
    ids = _seed(live_worker, "demo")
    page = _page(browser, live_worker, width=width, height=844)
    for path, name in (
        ("/", "timeline"),
        ("/work/", "my-work"),
        ("/settings/", "settings"),
        ("/stats/", "stats"),
        ("/search/?q=rounding", "search"),
        (f"/observations/{ids['observations'][0]}/", "observation"),
        (f"/sessions/{ids['sessions'][0]}/", "session"),
        ("/projects/webshop/file/?path=shop/checkout.py", "file"),
    ):
        page.goto(live_worker.url + path)
        page.locator("main h1").first.wait_for()
        scroll_width = page.evaluate("document.documentElement.scrollWidth")
        assert scroll_width <= width, f"{path} is {scroll_width}px wide at a {width}px viewport"
        _shot(page, f"{name}-{width}.png")
        # The file page's doc shots come from test_file_page_from_a_link_with_labels_by_hash,
        # whose project is on disk (the demo's is not, so its labels are all unknown).
        if width in DOC_WIDTHS and name != "file":
            DOC_SHOTS.mkdir(parents=True, exist_ok=True)
            # A full-page shot keeps a sticky bar where the first screen left it (over a
            # field mid-page): the guide's picture shows the settings' save bar at its end.
            page.evaluate(
                "document.getElementById('save-bar')?.style.setProperty('position', 'static')"
            )
            page.screenshot(path=str(DOC_SHOTS / f"{name}-{width}.png"), full_page=True)
    page.context.close()


def _hook(worker: LiveWorker, event: str, payload: dict[str, Any]) -> None:
    done = worker.run_hook(event, json.dumps(payload).encode())
    assert done.returncode == 0, done.stderr


def test_acceptance_prompt_edit_write_stop(
    live_worker: LiveWorker, browser: Any, tmp_path: Path
) -> None:
    """A prompt, an Edit inside the project and a Write outside it, then Stop: `/` shows the
    observation, /work/ the request card with the deliverable, whose download is the bytes."""
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    source = project / "app.py"
    source.write_text("def total(x):\n    return round(x)\n")
    outside = tmp_path / "handoff" / "release-notes.md"
    outside.parent.mkdir()
    base = {
        "session_id": "acc-session-1",
        "transcript_path": "",
        "cwd": str(project),
        "prompt_id": "acc-prompt-1",
        "permission_mode": "default",
    }

    _hook(
        live_worker,
        "session-init",
        {
            **base,
            "hook_event_name": "UserPromptSubmit",
            "prompt": "Fix rounding in app.py and write release notes",
        },
    )
    source.write_text("def total(x):\n    return round(x, 2)\n")
    _hook(
        live_worker,
        "observation",
        {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Edit",
            "tool_use_id": "toolu_acc_1",
            "tool_input": {
                "file_path": str(source),
                "old_string": "round(x)",
                "new_string": "round(x, 2)",
                "replace_all": False,
            },
            "tool_response": {
                "filePath": str(source),
                "oldString": "round(x)",
                "newString": "round(x, 2)",
                "structuredPatch": [],
            },
        },
    )
    written = b"# Release notes\n\n- Totals keep two decimals.\n\xe2\x9c\x93\n"
    outside.write_bytes(written)
    _hook(
        live_worker,
        "observation",
        {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Write",
            "tool_use_id": "toolu_acc_2",
            "tool_input": {"file_path": str(outside), "content": written.decode()},
            "tool_response": {"type": "create", "filePath": str(outside)},
        },
    )
    _hook(
        live_worker,
        "summarize",
        {
            **base,
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": "Fixed and wrote notes.",
        },
    )
    outside.unlink()  # temp folders vanish after the turn; the copy was made at Stop

    # The observation appears once the worker's consumer has compressed the tool uses.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if (
            json.loads(owner_open(live_worker.data_dir, live_worker.url + "/api/stats"))[
                "observations"
            ]
            >= 1
        ):
            break
        time.sleep(0.5)
    page = _page(browser, live_worker)
    page.goto(live_worker.url + "/?project=shop")
    page.locator("article.item-obs").first.wait_for()
    assert (
        page.locator("article.item-prompt")
        .get_by_text("Fix rounding in app.py and write release notes")
        .is_visible()
    )
    _shot(page, "acceptance-timeline.png")

    page.goto(live_worker.url + "/work/")
    card = page.locator("article.card").filter(
        has_text="Fix rounding in app.py and write release notes"
    )
    card.wait_for()
    assert card.get_by_text("release-notes.md").first.is_visible()
    with page.expect_download() as info:
        card.get_by_role("link", name="Download release-notes.md").click()
    assert Path(info.value.path()).read_bytes() == written
    _shot(page, "acceptance-my-work.png")
    page.context.close()


def test_search_highlights_marks_in_page_and_offsets_in_api(
    live_worker: LiveWorker, browser: Any
) -> None:
    _seed(live_worker, "demo")
    page = _page(browser, live_worker)
    page.goto(live_worker.url + "/search/?q=rounding")
    marks = page.locator(".snippet mark")
    marks.first.wait_for()
    texts = [t.lower() for t in marks.all_inner_texts()]
    assert texts and all(t.startswith("round") for t in texts), texts
    snippet_text = page.locator(".snippet").first.inner_text()
    assert "«" not in snippet_text and "»" not in snippet_text
    _shot(page, "search-highlights-1280.png")
    page.context.close()

    data = json.loads(owner_open(live_worker.data_dir, live_worker.url + "/api/search?q=rounding"))
    hits = [h for h in data["results"] if h["snippet"]]
    assert hits
    for hit in hits:
        assert "«" not in hit["snippet"] and "<mark" not in hit["snippet"]
        assert "\ue000" not in hit["snippet"]
    spans = [(h["snippet"], s) for h in hits for s in h["highlights"]]
    assert spans, hits
    for snippet, (start, end) in spans:
        assert snippet[start:end].lower().startswith("round"), (snippet, start, end)


def test_search_folds_near_identical_rows(live_worker: LiveWorker, browser: Any) -> None:
    _seed(live_worker, "demo")
    ids = _seed(live_worker, "fold")["ids"]
    page = _page(browser, live_worker)
    page.goto(live_worker.url + "/search/?q=parser")
    rows = page.locator("ol.hits > li.hit")
    rows.first.wait_for()
    assert rows.count() == 1
    expander = rows.first.locator("details.similar")
    assert expander.locator("summary").inner_text() == "+2 similar"
    assert expander.locator(".hit-similar").first.is_hidden()
    expander.locator("summary").click()
    shown = expander.locator(".hit-similar")
    assert shown.count() == 2 and shown.first.is_visible()
    assert "3 results, 1 after folding" in page.locator("main").inner_text()
    # The matches are still marked in the folded rows.
    assert shown.first.locator(".snippet mark, .item-title").count() >= 1
    _shot(page, "search-folded-1280.png")
    page.context.close()
    data = json.loads(
        owner_open(live_worker.data_dir, live_worker.url + "/api/search?q=parser&project=webshop")
    )
    hits = [h for h in data["results"] if h["id"] in ids]
    assert len(hits) == 3 and len({h["fold"] for h in hits}) == 1
    assert [h["fold_lead"] for h in hits] == [True, False, False]
    assert all(h["fold_size"] == 3 for h in hits)


def test_theme_toggle_light_dark_system_is_remembered(
    live_worker: LiveWorker, browser: Any
) -> None:
    """The system says dark; the toggle overrides it, survives a reload, and "System" hands
    back to the system. All under the strict CSP (no inline script or style)."""
    from memory.runtime.credentials import owner_login_url

    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="dark")
    context.set_default_timeout(15_000)
    page = context.new_page()
    page.goto(owner_login_url(live_worker.url, "/", data_dir=live_worker.data_dir))
    csp: list[str] = []
    page.on(
        "console",
        lambda msg: csp.append(msg.text) if "Content Security Policy" in msg.text else None,
    )

    def background() -> str:
        return page.evaluate("getComputedStyle(document.body).backgroundColor")

    page.goto(live_worker.url + "/")
    select = page.locator("#theme-select")
    select.wait_for()
    assert select.input_value() == "system"
    assert background() == "rgb(17, 18, 20)"  # the dark palette, from the system
    select.select_option("light")
    assert page.evaluate("document.documentElement.dataset.theme") == "light"
    assert background() == "rgb(247, 247, 248)"
    page.reload()
    page.locator("#theme-select").wait_for()
    assert page.locator("#theme-select").input_value() == "light"
    assert background() == "rgb(247, 247, 248)"
    assert page.evaluate("localStorage.getItem('cmem-theme')") == "light"
    page.goto(live_worker.url + "/search/")
    assert background() == "rgb(247, 247, 248)"  # every page, not just the one it was set on
    page.locator("#theme-select").select_option("dark")
    assert background() == "rgb(17, 18, 20)"
    page.locator("#theme-select").select_option("system")
    assert page.evaluate("document.documentElement.hasAttribute('data-theme')") is False
    assert page.evaluate("localStorage.getItem('cmem-theme')") is None
    assert background() == "rgb(17, 18, 20)"
    assert csp == []
    context.close()


def test_my_work_type_filter_and_badge_legend(live_worker: LiveWorker, browser: Any) -> None:
    ids = _seed(live_worker, "demo")
    page = _page(browser, live_worker)
    page.goto(live_worker.url + "/work/")
    legend = page.locator("#type-legend")
    legend.wait_for()
    for label in ("Bug Fix", "Feature", "Discovery", "Decision", "Security Alert"):
        assert legend.get_by_text(label, exact=True).is_visible(), label
    web_card = page.locator(f"#request-{ids['prompts'][0]}")
    api_card = page.locator(f"#request-{ids['prompts'][1]}")
    assert web_card.is_visible() and api_card.is_visible()

    page.get_by_label("Type").select_option("discovery")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**/work/?*type=discovery*")
    api_card.get_by_role("link", name="Login hashes the password twice").wait_for()
    assert web_card.count() == 0

    page.get_by_label("Type").select_option("bugfix")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**/work/?*type=bugfix*")
    web_card.get_by_role("link", name="Checkout total rounded before tax").wait_for()
    # Within the card only the chosen type's observations remain.
    assert web_card.get_by_role("link", name="Added a regression test for rounding").count() == 0
    assert api_card.count() == 0
    _shot(page, "my-work-type-filter-1280.png")

    # Deliverables by kind: only the images of the requests that made one.
    page.get_by_label("Type").select_option("")
    page.get_by_label("Deliverable kind").select_option("image")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**/work/?*kind=image*")
    web_card.locator(f"#deliverable-{ids['deliverables']['png']}").wait_for()
    assert web_card.locator(".deliv").count() == 1
    assert api_card.count() == 0
    page.get_by_label("Deliverable kind").select_option("markdown")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**/work/?*kind=markdown*")
    web_card.locator(f"#deliverable-{ids['deliverables']['md']}").wait_for()
    assert web_card.locator(".deliv").count() == 1
    # File paths are links to the file page.
    web_card.locator(".files-changed summary").click()
    web_card.locator(".files-changed").get_by_role("link", name="shop/checkout.py").click()
    page.locator("#file-path").wait_for()
    assert page.locator("#file-path").inner_text() == "shop/checkout.py"
    page.context.close()


def _rows(block: Any) -> list[str]:
    return block.locator("article[data-sort]").evaluate_all("els => els.map(e => e.id)")


def test_live_rows_slot_into_their_day_and_session(
    live_worker: LiveWorker, browser: Any, tmp_path: Path
) -> None:
    """Rows that arrive while the timeline is open land where a reload would put them: a
    prompt sent through the hook API joins its session's block at the end, an observation
    older than the block's newest row slots between its neighbours, a new session opens a
    block at the top of today; each block says how many rows are new, and the queue
    indicator counts what waits for compression."""
    ids = _seed(live_worker, "demo")
    web, api = ids["sessions"]
    page = _page(browser, live_worker)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(live_worker.url + "/")
    page.locator("#live-status").get_by_text("Live").wait_for()
    page.evaluate("window.__notReloaded = true")
    web_block = page.locator(f".block[data-session='{web}']")
    api_block = page.locator(f".block[data-session='{api}']")
    before_web = _rows(web_block)
    before_api = _rows(api_block)
    assert page.locator("#queue-status").get_attribute("data-count") == "0"

    # 1. A prompt of the api-server session, through the hook API.
    cwd = tmp_path / "api-server"
    (cwd / ".git").mkdir(parents=True)
    base = {"session_id": "sess-api-1", "transcript_path": "", "cwd": str(cwd)}
    _hook(
        live_worker,
        "session-init",
        {
            **base,
            "hook_event_name": "UserPromptSubmit",
            "prompt": "Now cache the hash",
            "prompt_id": "p-live-1",
        },
    )
    api_block.locator(".item-prompt").get_by_text("Now cache the hash").wait_for(timeout=20_000)
    after_api = _rows(api_block)
    assert after_api[: len(before_api)] == before_api and len(after_api) == len(before_api) + 1
    assert api_block.locator(".new-count").inner_text() == "1 new"

    # 2. An observation of the webshop session from 47 minutes ago: between the rows of 48
    #    and 46 minutes ago, not on top.
    new = _seed(live_worker, "observation-at", "Tax table loaded once", "47", "sess-web-1")
    web_block.get_by_role("link", name="Tax table loaded once").wait_for(timeout=20_000)
    after_web = _rows(web_block)
    o1, o2 = (f"obs-{pk}" for pk in ids["observations"][:2])
    assert after_web.index(o1) < after_web.index(f"obs-{new['id']}") < after_web.index(o2), (
        after_web
    )
    assert sorted(after_web) == sorted([*before_web, f"obs-{new['id']}"])
    assert web_block.locator(".new-count").inner_text() == "1 new"
    assert page.locator(f"#obs-{new['id']}").evaluate("e => e.classList.contains('is-new')")

    # 3. A new session: its own block, at the top of today's section.
    fresh = tmp_path / "fresh-project"
    (fresh / ".git").mkdir(parents=True)
    _hook(
        live_worker,
        "session-init",
        {"session_id": "sess-live-new", "transcript_path": "", "cwd": str(fresh),
         "hook_event_name": "UserPromptSubmit", "prompt": "Start the new thing", "prompt_id": "p-live-2"},
    )  # fmt: skip
    today = page.locator("section.day").first
    today.locator(".block").first.get_by_text("Start the new thing").wait_for(timeout=20_000)
    assert today.locator(".block").first.locator(".proj-link").inner_text() == "fresh-project"
    assert page.locator("#live-new-count").inner_text() == "3 new since this page loaded"
    _shot(page, "timeline-live-slotted-1280.png")

    # The order on the page is the order a reload shows.
    slotted = page.locator("#feed article[data-sort]").evaluate_all("els => els.map(e => e.id)")
    assert page.evaluate("window.__notReloaded") is True
    page.get_by_role("button", name="Mark as seen").click()
    assert page.locator(".is-new").count() == 0
    page.reload()
    page.locator("#feed article").first.wait_for()
    assert (
        page.locator("#feed article[data-sort]").evaluate_all("els => els.map(e => e.id)")
        == slotted
    )
    assert errors == []
    page.context.close()


def test_queue_indicator_counts_events_waiting(live_worker: LiveWorker, browser: Any) -> None:
    """An event captured while compression cannot run shows up in the queue indicator."""
    _seed(live_worker, "demo")
    _seed(live_worker, "pending-event")
    page = _page(browser, live_worker)
    for path in ("/", "/work/"):
        page.goto(live_worker.url + path)
        queue = page.locator("#queue-status")
        queue.wait_for()
        assert int(queue.get_attribute("data-count") or "0") >= 1, path
        assert "waiting for compression" in queue.inner_text()
    page.context.close()


def test_file_page_from_a_link_with_labels_by_hash(
    live_worker: LiveWorker, browser: Any, tmp_path: Path
) -> None:
    root = tmp_path / "filedemo"
    (root / "app").mkdir(parents=True)
    cart = root / "app" / "cart.py"
    cart.write_bytes(b"def total(items):\n    return round(sum(items), 2)\n")
    ids = _seed(live_worker, "file", str(root))
    page = _page(browser, live_worker)
    page.goto(live_worker.url + f"/observations/{ids['observations'][1]}/")
    page.locator(".file-list").get_by_role("link", name="app/cart.py").click()
    page.get_by_role("heading", level=1, name="cart.py").wait_for()
    assert page.locator("#file-path").inner_text() == "app/cart.py"
    assert "on disk now" in page.locator("#file-state").inner_text()
    rows = page.locator("#gate-timeline .gate-row")
    assert rows.count() == 2
    # The gate's ranking: the observation that modified the file first.
    assert "Cart total rounded to cents" in rows.nth(0).inner_text()
    assert rows.nth(0).get_attribute("data-label") == "unchanged"
    assert rows.nth(1).get_attribute("data-label") == "changed"
    sessions = page.locator("#file-sessions li")
    assert sessions.count() == 2
    _shot(page, "file-1280.png")
    for width in DOC_WIDTHS:
        page.set_viewport_size({"width": width, "height": 844})
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        DOC_SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(DOC_SHOTS / f"file-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})

    # Edit the file on disk: the newest observation no longer matches it.
    cart.write_bytes(b"def total(items):\n    return sum(items)\n")
    page.reload()
    assert page.locator("#gate-timeline .gate-row").nth(0).get_attribute("data-label") == "changed"

    # Links from the timeline reach it too; a hostile path is shown escaped, not run.
    page.goto(live_worker.url + "/?project=filedemo")
    page.locator(".files").get_by_role("link", name="cart.py").first.click()
    page.locator("#file-path").wait_for()
    assert page.locator("#file-path").inner_text() == "app/cart.py"
    page.goto(live_worker.url + "/projects/filedemo/file/?path=../../etc/passwd")
    assert "Memory knows nothing" in page.locator("main").inner_text()
    page.context.close()


def _field_covered(page: Any) -> list[str]:
    """Fields of the settings form that the sticky save bar covers once the field is scrolled
    into view (as focusing it or following a link to it does): the page's scroll padding
    must keep every field above the bar. Fields in a closed section are skipped."""
    return page.evaluate(
        """() => {
          const bar = document.getElementById('save-bar');
          const fields = [...document.querySelectorAll('#settings-form .setting input, #settings-form .setting select')]
            .filter(f => f.type !== 'hidden');
          const overlaps = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
          const covered = new Set();
          for (const f of fields) {
            f.scrollIntoView({block: 'nearest'});
            const r = f.getBoundingClientRect();
            if (r.width === 0) continue;
            const b = bar.getBoundingClientRect();
            if (overlaps(r, b)) covered.add(f.name);
            const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
            if (hit && bar.contains(hit)) covered.add(f.name);
          }
          return [...covered];
        }"""
    )


@pytest.mark.parametrize("width", [1400, 420])
def test_settings_errors_markers_and_save_bar(
    live_worker: LiveWorker, browser: Any, width: int
) -> None:
    page = _page(browser, live_worker, width=width, height=900)
    page.goto(live_worker.url + "/settings/")
    page.locator("#settings-form").wait_for()
    assert _field_covered(page) == []
    # The basic settings by their words; the rest under a collapsed Advanced section,
    # grouped by what they affect, each with its raw key.
    field = page.get_by_label("Observations in the index")
    assert field.get_attribute("name") == "CLAUDE_MEM_CONTEXT_OBSERVATIONS"
    assert "CLAUDE_MEM_" not in page.locator("#basic-settings").inner_text()
    legend = page.locator("legend", has_text="What the agent sees at session start")
    assert legend.is_hidden()
    page.locator("#advanced-settings > summary").click()
    assert legend.is_visible()
    # The save bar is reachable from anywhere on the page.
    page.evaluate("scrollTo(0, document.body.scrollHeight / 3)")
    assert page.locator("#save-bar").evaluate(
        "e => { const r = e.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }"
    )
    assert _field_covered(page) == []

    # Editing marks the value at once; the save fails on another field.
    row = page.locator("#setting-CLAUDE_MEM_RETENTION_DAYS")
    assert row.locator(".tag-edited").is_hidden()
    row.locator("input").fill("45")
    assert row.locator(".tag-edited").is_visible()
    assert "1 edited" in page.locator("#edited-count").inner_text()
    field.fill("-3")
    page.get_by_label("Sessions in the index").fill("500")  # over its maximum
    page.get_by_role("button", name="Save settings").click()
    summary = page.locator("#error-summary")
    summary.wait_for()
    assert "2 problems to fix" in summary.inner_text()
    assert page.evaluate("document.activeElement.id") == "error-summary"
    assert summary.evaluate("e => e.getBoundingClientRect().top < innerHeight")
    # Its links lead to the fields.
    summary.get_by_role("link", name="Observations in the index").click()
    assert page.evaluate("location.hash") == "#id_CLAUDE_MEM_CONTEXT_OBSERVATIONS"
    # ...and the field lands in view, under neither the sticky header nor the save bar.
    assert page.evaluate(
        """() => {
          const f = document.getElementById('id_CLAUDE_MEM_CONTEXT_OBSERVATIONS');
          const r = f.getBoundingClientRect();
          return document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2) === f;
        }"""
    )
    assert page.locator("#setting-CLAUDE_MEM_CONTEXT_OBSERVATIONS").evaluate(
        "e => e.classList.contains('has-error')"
    )
    # Nothing was saved: the edited value is marked as edited, not as changed.
    assert row.locator(".tag-edited").is_visible()
    assert row.locator(".tag-changed").count() == 0
    assert _field_covered(page) == []
    _shot(page, f"settings-errors-{width}.png")

    # A good save: the non-default value is now marked changed.
    page.get_by_label("Observations in the index").fill("40")
    page.get_by_label("Sessions in the index").fill("10")
    page.get_by_role("button", name="Save settings").click()
    page.get_by_text("Settings saved").wait_for()
    saved = page.locator("#setting-CLAUDE_MEM_CONTEXT_OBSERVATIONS")
    assert saved.locator(".tag-changed").is_visible()
    assert page.locator("#setting-CLAUDE_MEM_CONTEXT_TOKENS .tag-changed").count() == 0
    page.context.close()
