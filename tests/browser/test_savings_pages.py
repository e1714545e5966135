"""Savings in money and a session's gate decisions in a real browser (Debian's Chromium
through Playwright) against a real `cmem serve`, fed by real `cmem hook` calls: the stats
tiles show money with one line each and the net with its parts; the session page lists each
refusal, what it led to, the retry, the memory tool's answer and the SessionStart index, and
both pages fit a 420 px screen."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_web import ARGS, CHROMIUM, SHOTS, _page
from tests.support import CLAUDE_FIXTURES, REPO, LiveWorker

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="/usr/bin/chromium is missing (apt-get install chromium)"
    ),
]

SID = "savings-browser-session"


@pytest.fixture(scope="module")
def browser() -> Any:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        try:
            yield instance
        finally:
            instance.close()


def _hook(worker: LiveWorker, event: str, name: str, **fields: Any) -> dict[str, Any]:
    payload = json.loads((CLAUDE_FIXTURES / name).read_text())
    payload.update(session_id=SID, **fields)
    done = worker.run_hook(event, json.dumps(payload).encode())
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode().strip()
    return json.loads(out) if out else {}


def _session(worker: LiveWorker, root: Path, tmp_path: Path) -> None:
    """A session through the real hooks: index, two refusals (one read again, one answered
    with smart_outline), then a Stop whose transcript names the model."""
    rels = ["src/orders.py", "src/billing.py"]
    for rel in rels:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("def handler(request):\n    return {'ok': True}\n\n" * 400)  # 17 KB
    subprocess.run(
        [sys.executable, "-m", "tests.browser.seed_savings", "known", str(root), *rels],
        env=worker.env,
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=60,
    )
    cwd = str(root)
    _hook(worker, "context", "SessionStart.json", cwd=cwd)
    prompt = "Check the order handlers before the release"
    _hook(worker, "session-init", "UserPromptSubmit.json", cwd=cwd, prompt=prompt)
    orders, billing = (str(root / rel) for rel in rels)
    refused = _hook(
        worker, "file-context", "PreToolUse.json", cwd=cwd, tool_input={"file_path": orders}
    )
    assert refused["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert (
        _hook(worker, "file-context", "PreToolUse.json", cwd=cwd, tool_input={"file_path": orders})
        == {}
    )
    _hook(worker, "file-context", "PreToolUse.json", cwd=cwd, tool_input={"file_path": billing})
    _hook(
        worker,
        "observation",
        "PostToolUse.json",
        cwd=cwd,
        tool_name="mcp__cmem__smart_outline",
        tool_input={"file_path": billing},
        tool_response=[{"type": "text", "text": "def handler(request)  L1-2\n" * 30}],
        tool_use_id="toolu_savings_outline",
    )
    transcript = tmp_path / "transcript.jsonl"
    text = (CLAUDE_FIXTURES / "transcript.basic.jsonl").read_text()
    transcript.write_text(text.replace('"model":"claude-opus-5-5"', '"model":"claude-sonnet-5-5"'))
    _hook(worker, "summarize", "Stop.json", cwd=cwd, transcript_path=str(transcript))


@pytest.mark.parametrize("width", [1400, 420])
def test_money_tiles_and_the_sessions_gate_decisions(
    live_worker: LiveWorker, browser: Any, tmp_path: Path, width: int
) -> None:
    root = tmp_path / "shop-api"
    _session(live_worker, root, tmp_path)
    page = _page(browser, live_worker, width=width, height=900)
    page.goto(live_worker.url + "/stats/")
    tiles = page.locator("#money-tiles")
    tiles.wait_for()
    saved = page.locator("#tile-saved")
    assert saved.locator("dd").inner_text().startswith("$")
    assert "at claude-sonnet-5-5's input price" in saved.inner_text()
    for tile in ("#tile-added", "#tile-observer"):
        assert page.locator(f"#{tile[1:]} .tile-help").inner_text().strip()
    net = page.locator("#net-parts").inner_text()
    assert net.startswith("Saved $") and " − added $" in net and " − observer $" in net
    assert "API-equivalent" in page.locator("#tile-net dt").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"stats-money-{width}.png"), full_page=True)

    db = sqlite3.connect(f"file:{live_worker.data_dir / 'cmem.sqlite3'}?mode=ro", uri=True)
    try:
        (pk,) = db.execute("SELECT id FROM memory_session WHERE session_id = ?", (SID,)).fetchone()
    finally:
        db.close()
    page.goto(f"{live_worker.url}/sessions/{pk}/")
    section = page.locator("#session-ledger")
    section.wait_for()
    rows = section.locator("tbody tr")
    labels = [rows.nth(i).locator("td").nth(1).inner_text() for i in range(rows.count())]
    assert labels == [
        "SessionStart index (startup)",
        "refused",
        "passed on retry",
        "refused",
        "memory tool smart_outline",
    ], labels
    outcomes = [rows.nth(i).locator("td").nth(3).inner_text() for i in range(rows.count())]
    assert outcomes[1] == "read again: the refusal was overhead"
    assert outcomes[3] == "smart_outline instead"
    assert "src/billing.py" in rows.nth(3).inner_text()
    assert "at claude-sonnet-5-5" in page.locator("#session-ledger-net").inner_text()
    assert "Read gate in shop-api:" in page.locator("#session-gate-mode").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(SHOTS / f"session-ledger-{width}.png"), full_page=True)
    page.context.close()
