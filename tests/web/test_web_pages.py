"""Issue 20's web app through Django's test client: the file page, live rows that say where
they belong, the queue indicator, the settings page's words and errors, My Work's
deliverable kinds and folded search hits."""

from __future__ import annotations

import hashlib
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from memory.models import Event, FileView
from tests.browser.seed import (
    XSS,
    make_deliverable,
    make_file_rows,
    make_observation,
    make_prompt,
    seed_demo,
)
from tests.factories import SessionFactory

pytestmark = pytest.mark.django_db


def _file_url(project: str, path: str) -> str:
    return reverse("memory-file", args=[project]) + "?" + urlencode({"path": path})


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- the file page ----------------------------------------------------------------------


def test_file_page_shows_the_gate_timeline_with_labels_by_hash(
    client: Client, tmp_path: Path
) -> None:
    root = tmp_path / "shop"
    (root / "app").mkdir(parents=True)
    source = root / "app" / "cart.py"
    source.write_bytes(b"v2\n")
    session_a = SessionFactory(project="shop", root=str(root), session_id="file-a")
    session_b = SessionFactory(project="shop", root=str(root), session_id="file-b")
    old = make_observation(
        session_a, "Cart read first", minutes_ago=90, files_read=["app/cart.py"], type="discovery"
    )
    make_file_rows(old, {"app/cart.py": _sha(b"v1\n")})
    new = make_observation(
        session_b, "Cart total fixed", minutes_ago=5, files_modified=["app/cart.py"], type="bugfix"
    )
    make_file_rows(new, {"app/cart.py": _sha(b"v2\n")})
    FileView.objects.create(session=session_b, path=str(source), content_hash=_sha(b"v2\n"))

    resp = client.get(_file_url("shop", "app/cart.py"))
    assert resp.status_code == 200
    body = resp.content.decode()
    assert "on disk now" in body
    gate = body[body.index('id="gate-timeline"') : body.index('id="file-observations"')]
    # The gate's rank: the observation that modified the file first, then the read.
    assert gate.index("Cart total fixed") < gate.index("Cart read first")
    assert f'<span class="id">#{new.pk}</span>' in gate
    rows = {"Cart total fixed": "unchanged", "Cart read first": "changed"}
    for title, label in rows.items():
        line = next(li for li in gate.split("<li") if title in li)
        assert f'data-label="{label}"' in line, line
    sessions = body[body.index('id="file-sessions"') :]
    assert reverse("memory-session-detail", args=[session_a.pk]) in sessions
    assert reverse("memory-session-detail", args=[session_b.pk]) in sessions
    assert "modified it" in sessions and "read " in sessions


def test_file_page_labels_unknown_without_a_readable_file(client: Client, tmp_path: Path) -> None:
    session = SessionFactory(project="gone", root=str(tmp_path / "nowhere"), session_id="g-1")
    obs = make_observation(session, "Old file", files_modified=["lib/old.py"])
    make_file_rows(obs, {"lib/old.py": _sha(b"x")})
    body = client.get(_file_url("gone", "lib/old.py")).content.decode()
    assert 'data-label="unknown"' in body
    assert "Not on this machine now" in body


def test_file_page_never_reads_outside_the_project(client: Client, tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    secret = tmp_path / "outside.txt"
    secret.write_bytes(b"secret")
    (root / "link.txt").symlink_to(secret)
    session = SessionFactory(project="proj", root=str(root), session_id="t-1")
    for path in ("../outside.txt", "link.txt", str(secret)):
        obs = make_observation(session, f"About {path}", files_read=[path])
        make_file_rows(obs, {path: _sha(b"secret")})
        body = client.get(_file_url("proj", path)).content.decode()
        # The stored hash equals the file's, yet nothing says "unchanged": it was not read.
        assert 'data-label="unknown"' in body, path
        assert 'data-label="unchanged"' not in body, path
        assert "on disk now" not in body, path
    for odd in ("a\x00b", "x/" * 3000, "/" * 50, "."):
        assert client.get(_file_url("proj", odd)).status_code in (200, 404), odd
    assert client.get(_file_url("pr\x00oj", "a.py")).status_code == 404


def test_file_page_escapes_hostile_names_and_404s_unknown_files(client: Client) -> None:
    project = f"p{XSS}"
    path = f'src/{XSS}".py'
    session = SessionFactory(project=project, root="/home/dev/x", session_id="x-1")
    obs = make_observation(session, "Hostile", files_modified=[path])
    make_file_rows(obs)
    resp = client.get(_file_url(project, path))
    assert resp.status_code == 200
    body = resp.content.decode()
    assert XSS not in body and "&lt;script&gt;" in body
    # The timeline links to the same page, with the name escaped in the href.
    timeline = client.get("/").content.decode()
    assert XSS not in timeline
    assert escape(_file_url(project, path)) in timeline
    assert client.get(_file_url(project, "never/seen.py")).status_code == 404
    assert client.get(reverse("memory-file", args=["x"])).status_code == 404


def test_file_links_on_every_page(client: Client) -> None:
    ids = seed_demo()
    link = escape(_file_url("webshop", "shop/checkout.py"))
    pages = [
        "/",
        reverse("memory-observation-detail", args=[ids["observations"][0]]),
        reverse("memory-session-detail", args=[ids["sessions"][0]]),
        reverse("deliverables-my-work"),
        reverse("memory-search") + "?q=checkout",
    ]
    for url in pages:
        body = client.get(url).content.decode()
        assert link in body, url
    # Deliverables link to the path they were written to.
    work = client.get(reverse("deliverables-my-work")).content.decode()
    assert escape(_file_url("webshop", "/tmp/out/notes.txt")) in work
    page = client.get(_file_url("webshop", "shop/checkout.py")).content.decode()
    assert "Checkout total rounded before tax" in page


# --- live updates and the queue ----------------------------------------------------------


def test_live_items_say_where_they_belong_and_the_queue_is_counted(client: Client) -> None:
    ids = seed_demo()
    session = SessionFactory(project="webshop", root="/home/dev/webshop", session_id="live-2")
    Event.objects.create(session=session, kind=Event.Kind.OBSERVATION, payload={})
    first = make_observation(session, "Older of two", minutes_ago=3)
    second = make_observation(session, "Newer of two", minutes_ago=1)
    data = client.get(
        reverse("memory-live"), {"obs": max(ids["observations"]), "sum": 10**6, "prompt": 10**6}
    ).json()
    assert data["queue"] == 1
    assert [i["id"] for i in data["items"]] == [f"obs-{first.pk}", f"obs-{second.pk}"]
    a, b = data["items"]
    assert a["session"] == session.pk and a["day"] == first.created.date().isoformat()
    assert a["sort"] < b["sort"]
    assert f'data-session="{session.pk}"' in a["block_html"]
    assert f'data-day="{a["day"]}"' in a["day_html"]
    assert f'data-sort="{a["sort"]}"' in a["html"]
    # The page renders the same keys, so the script can slot rows among them.
    body = client.get("/").content.decode()
    assert f'data-sort="{a["sort"]}"' in body
    assert 'id="queue-status" data-count="1"' in body
    assert 'id="queue-status" data-count="1"' in client.get("/work/").content.decode()


# --- settings ------------------------------------------------------------------------------


def test_settings_human_labels_raw_keys_and_changed_markers(client: Client) -> None:
    from memory import config

    config.save({"CLAUDE_MEM_CONTEXT_OBSERVATIONS": "7"})
    body = client.get(reverse("memory-settings")).content.decode()
    assert "What the agent sees at session start" in body
    assert "Observations in the index" in body
    # A basic setting shows its words only; an advanced one its key too.
    assert '<code class="setting-key">CLAUDE_MEM_CONTEXT_OBSERVATIONS</code>' not in body
    assert '<code class="setting-key">CLAUDE_MEM_CONTEXT_TOKENS</code>' in body
    assert (
        "is-changed"
        in body[body.index('id="setting-CLAUDE_MEM_CONTEXT_OBSERVATIONS"') - 80 :][:200]
    )
    other = body[body.index('id="setting-CLAUDE_MEM_CONTEXT_TOKENS"') - 80 :][:200]
    assert "is-changed" not in other


def test_failed_save_shows_a_summary_linking_to_the_fields(client: Client) -> None:
    form = client.get(reverse("memory-settings")).context["form"]
    data = {
        k: ("on" if v is True else v)
        for k, v in form.initial.items()
        if v is not False and not form.fields[k].disabled
    }
    data["CLAUDE_MEM_CONTEXT_OBSERVATIONS"] = "-5"
    data["CLAUDE_MEM_CONTEXT_SESSION_COUNT"] = "many"
    data["CLAUDE_MEM_RETENTION_DAYS"] = "0"  # valid, just edited
    resp = client.post(reverse("memory-settings"), data)
    assert resp.status_code == 200
    body = resp.content.decode()
    summary = body[
        body.index('id="error-summary"') : body.index("</div>", body.index('id="error-summary"'))
    ]
    assert "2 problems to fix" in summary
    assert 'href="#id_CLAUDE_MEM_CONTEXT_OBSERVATIONS"' in summary
    assert 'href="#id_CLAUDE_MEM_CONTEXT_SESSION_COUNT"' in summary
    assert "Observations in the index" in summary
    edited = body[body.index('id="setting-CLAUDE_MEM_RETENTION_DAYS"') - 120 :][:200]
    assert "is-edited" in edited
    unedited = body[body.index('id="setting-CLAUDE_MEM_CONTEXT_TOKENS"') - 120 :][:200]
    assert "is-edited" not in unedited
    assert 'value="-5"' in body  # the posted value is shown back to be fixed


# --- My Work: deliverable kinds ------------------------------------------------------------


def test_my_work_filters_deliverables_by_kind(client: Client) -> None:
    ids = seed_demo()
    session = SessionFactory(project="tools", root="/home/dev/tools", session_id="k-1")
    prompt = make_prompt(session, "Build the archive")
    make_deliverable(session, prompt, "bundle.zip", b"PK\x03\x04", "application/zip")
    url = reverse("deliverables-my-work")
    body = client.get(url, {"kind": "image"}).content.decode()
    assert f'id="deliverable-{ids["deliverables"]["png"]}"' in body
    assert f'id="deliverable-{ids["deliverables"]["md"]}"' not in body
    assert "Build the archive" not in body
    body = client.get(url, {"kind": "other"}).content.decode()
    assert "Build the archive" in body and "bundle.zip" in body
    assert "Fix the checkout rounding bug" not in body
    body = client.get(url, {"kind": "text"}).content.decode()
    assert f'id="deliverable-{ids["deliverables"]["txt"]}"' in body
    assert f'id="deliverable-{ids["deliverables"]["html"]}"' not in body
    assert f'id="deliverable-{ids["deliverables"]["md"]}"' not in body


# --- search: folded rows --------------------------------------------------------------------


def test_search_folds_near_identical_rows_and_the_api_keeps_them(client: Client) -> None:
    session = SessionFactory(project="fold", root="/home/dev/fold", session_id="f-1")
    for i in range(3):
        make_observation(
            session,
            "Parser cache invalidated!" if i else "parser cache  invalidated",
            type="change",
            files_modified=["src/parser.py"],
            minutes_ago=10 - i,
        )
    make_observation(
        session, "Parser cache invalidated", type="bugfix", files_modified=["src/parser.py"]
    )
    body = client.get(reverse("memory-search"), {"q": "parser"}).content.decode()
    assert "4 results, 2 after folding" in body
    assert "+2 similar" in body
    data = client.get("/api/search", {"q": "parser", "project": "fold"}).json()["results"]
    assert len(data) == 4
    folds: dict[str, list[dict[str, object]]] = {}
    for hit in data:
        folds.setdefault(str(hit["fold"]), []).append(hit)
    sizes = sorted(len(v) for v in folds.values())
    assert sizes == [1, 3]
    for members in folds.values():
        assert [m["fold_lead"] for m in members] == [True] + [False] * (len(members) - 1)
        assert all(m["fold_size"] == len(members) for m in members)


# --- timeline: one block per session --------------------------------------------------------


def test_parallel_sessions_in_the_same_minute_get_one_block_each(client: Client) -> None:
    """Two sessions logging in turn within a minute: each is one block, the one with the
    newest row first, its rows oldest first (issue 35: they were split into runs)."""
    one = SessionFactory(project="alpha", root="/home/dev/alpha", session_id="par-1")
    two = SessionFactory(project="beta", root="/home/dev/beta", session_id="par-2")
    for i, session in enumerate([one, two, one, two, one]):
        make_observation(session, f"step {i} of {session.session_id}", minutes_ago=1 - i * 0.1)
    body = client.get(reverse("memory-timeline")).content.decode()
    assert body.count(f'data-session="{one.pk}"') == 1
    assert body.count(f'data-session="{two.pk}"') == 1
    assert body.index(f'data-session="{one.pk}"') < body.index(f'data-session="{two.pk}"')
    block = body[body.index(f'data-session="{one.pk}"') : body.index(f'data-session="{two.pk}"')]
    assert (
        block.index("step 0 of par-1")
        < block.index("step 2 of par-1")
        < block.index("step 4 of par-1")
    )


# --- the empty timeline: the next step -------------------------------------------------------


def test_the_empty_timeline_says_install_or_start_a_session(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It reads the agents' settings files like `cmem doctor`: no hooks → set up; hooks →
    start a session; both name `cmem demo` for sample data (issue 35)."""
    from memory.agents.install import claude_code

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / ".claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / ".codex"))
    body = client.get(reverse("memory-timeline")).content.decode()
    assert "No memory yet" in body and "<kbd>cmem setup</kbd>" in body
    assert "<kbd>cmem demo</kbd>" in body and "hooks are installed in" not in body
    claude_code.settings_install(path=claude_code.claude_settings_path(), command="cmem")
    body = client.get(reverse("memory-timeline")).content.decode()
    assert "hooks are installed in Claude Code. Start a coding session" in body, body[
        body.find("No memory") :
    ][:600]
    assert "<kbd>cmem setup</kbd>" not in body and "<kbd>cmem demo</kbd>" in body
    # A filtered empty page is about the filters, not the install.
    assert (
        "Clear the filters" in client.get(reverse("memory-timeline"), {"q": "x"}).content.decode()
    )
