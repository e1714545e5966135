from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from deliverables.models import Deliverable
from deliverables.services import deliverables_root
from memory.models import Event
from tests.browser.seed import (
    XSS,
    make_deliverable,
    make_observation,
    make_prompt,
    make_summary,
    seed_demo,
)
from tests.factories import SessionFactory

pytestmark = pytest.mark.django_db


def test_my_work_empty_state(client: Client) -> None:
    body = client.get(reverse("deliverables-my-work")).content.decode()
    assert "No requests yet" in body


def test_request_card_shows_what_the_prompt_produced(client: Client) -> None:
    ids = seed_demo()
    resp = client.get(reverse("deliverables-my-work"))
    body = resp.content.decode()
    card = body[body.index(f'id="request-{ids["prompts"][0]}"') :]
    card = card[: card.index("</article>")]
    assert "Fix the checkout rounding bug" in card
    assert "Checkout total rounded before tax" in card
    assert "Added a regression test for rounding" in card
    assert "Rounding happens after tax now." in card  # completed
    assert "Ship the fix to staging." in card  # next steps
    assert "shop/checkout.py" in card and "tests/test_checkout.py" in card  # files changed
    for name in ("CHANGES.md", "report.html", "notes.txt", "chart.png"):
        assert name in card
    assert reverse("deliverables-download", args=[ids["deliverables"]["md"]]) in card
    # Grouped by day and project.
    groups = resp.context["work"].groups
    assert [g.project for g in groups] == ["api-server", "webshop"]


def test_previews_are_safe(client: Client) -> None:
    ids = seed_demo()
    body = client.get(reverse("deliverables-my-work")).content.decode()
    # Markdown rendered, raw HTML in it neither rendered nor run.
    assert "<strong>Rounding</strong>" in body
    assert "<script>alert(1)</script>" not in body
    # HTML only inside a sandboxed iframe from the preview URL.
    html_preview = reverse("deliverables-preview", args=[ids["deliverables"]["html"]])
    assert f'<iframe sandbox="" src="{html_preview}"' in body
    assert "document.title='pwned'" not in body
    # Text escaped inline; images through the preview URL.
    assert "plain notes\nline two" in body
    assert (
        f'<img src="{reverse("deliverables-preview", args=[ids["deliverables"]["png"]])}"' in body
    )


def test_escapes_untrusted_names_and_text(client: Client) -> None:
    session = SessionFactory(project="demo", root="/home/dev/projects/demo", session_id="s-1")
    prompt = make_prompt(session, XSS)
    make_deliverable(session, prompt, "x.txt", XSS.encode())
    d = Deliverable.objects.get()
    d.original_path = f"/tmp/{XSS}"
    d.save()
    body = client.get(reverse("deliverables-my-work")).content.decode()
    assert "<script>alert" not in body
    assert "&lt;script&gt;" in body


def test_time_spent_runs_to_the_end_of_the_turn(client: Client) -> None:
    session = SessionFactory(project="demo", root="/home/dev/projects/demo", session_id="s-1")
    prompt = make_prompt(session, "do it", minutes_ago=10)
    make_observation(session, "did it", minutes_ago=1)  # compressed late
    Event.objects.create(
        session=session,
        kind=Event.Kind.SUMMARY,
        prompt_number=prompt.number,
        created=prompt.created + timedelta(minutes=3, seconds=5),
    )
    resp = client.get(reverse("deliverables-my-work"))
    card = resp.context["work"].groups[0].cards[0]
    assert card.duration == timedelta(minutes=3, seconds=5)
    assert "3m 05s" in resp.content.decode()


def test_time_spent_falls_back_to_observations_and_summary(client: Client) -> None:
    session = SessionFactory(project="demo", root="/home/dev/projects/demo", session_id="s-1")
    make_prompt(session, "do it", minutes_ago=10)
    make_observation(session, "did it", minutes_ago=8)
    make_summary(session, minutes_ago=6, completed="done")
    card = client.get(reverse("deliverables-my-work")).context["work"].groups[0].cards[0]
    assert timedelta(minutes=3, seconds=59) < card.duration < timedelta(minutes=4, seconds=1)


def test_filters_by_project_and_date(client: Client) -> None:
    seed_demo()
    old = SessionFactory(project="legacy", root="/home/dev/projects/demo", session_id="old")
    prompt = make_prompt(old, "an old request", minutes_ago=60 * 24 * 20)
    assert prompt.created < timezone.now() - timedelta(days=19)
    body = client.get(reverse("deliverables-my-work"), {"project": "api-server"}).content.decode()
    assert "Why is the login endpoint slow?" in body and "Fix the checkout" not in body
    today = timezone.localdate().isoformat()
    body = client.get(reverse("deliverables-my-work"), {"date_from": today}).content.decode()
    assert "an old request" not in body and "Fix the checkout" in body
    body = client.get(
        reverse("deliverables-my-work"),
        {"date_to": (timezone.localdate() - timedelta(days=10)).isoformat()},
    ).content.decode()
    assert "an old request" in body and "Fix the checkout" not in body


def test_download_returns_exact_bytes_as_attachment(client: Client) -> None:
    session = SessionFactory(project="demo", root="/home/dev/projects/demo", session_id="s-1")
    prompt = make_prompt(session, "make a report")
    payload = bytes(range(256)) * 10
    d = make_deliverable(session, prompt, "data.bin", payload)
    resp = client.get(reverse("deliverables-download", args=[d.pk]))
    assert resp.status_code == 200
    assert b"".join(resp.streaming_content) == payload
    assert resp["Content-Disposition"].startswith("attachment;")
    assert 'filename="data.bin"' in resp["Content-Disposition"]
    assert resp["Content-Type"] == "application/octet-stream"
    assert resp["X-Content-Type-Options"] == "nosniff"


def test_download_content_type_follows_the_name(client: Client) -> None:
    session = SessionFactory(project="demo", root="/home/dev/projects/demo", session_id="s-1")
    d = make_deliverable(session, make_prompt(session, "x"), "page.html", b"<h1>x</h1>")
    resp = client.get(reverse("deliverables-download", args=[d.pk]))
    assert resp["Content-Type"].startswith("text/html")
    assert resp["Content-Disposition"].startswith("attachment;")


def test_download_refuses_paths_outside_the_root(client: Client, data_dir) -> None:  # type: ignore[no-untyped-def]
    session = SessionFactory(project="demo", root="/home/dev/projects/demo", session_id="s-1")
    secret = data_dir / "secret_key_copy"
    secret.write_text("top secret")
    deliverables_root().mkdir(parents=True, exist_ok=True)
    d = make_deliverable(session, make_prompt(session, "x"), "ok.txt", b"ok")
    for evil in ("../secret_key_copy", "/etc/passwd", "webshop/../../secret_key_copy", ""):
        Deliverable.objects.filter(pk=d.pk).update(stored_path=evil)
        assert client.get(reverse("deliverables-download", args=[d.pk])).status_code == 404, evil
        assert client.get(reverse("deliverables-preview", args=[d.pk])).status_code == 404, evil
    assert client.get(reverse("deliverables-download", args=[99999])).status_code == 404


def test_download_of_a_vanished_copy_is_404(client: Client) -> None:
    session = SessionFactory(project="demo", root="/home/dev/projects/demo", session_id="s-1")
    d = make_deliverable(session, make_prompt(session, "x"), "gone.txt", b"bye")
    (deliverables_root() / d.stored_path).unlink()
    assert client.get(reverse("deliverables-download", args=[d.pk])).status_code == 404
    assert (
        "The stored copy is missing."
        in client.get(reverse("deliverables-my-work")).content.decode()
    )


def test_preview_is_sandboxed(client: Client) -> None:
    ids = seed_demo()
    resp = client.get(reverse("deliverables-preview", args=[ids["deliverables"]["html"]]))
    assert resp.status_code == 200
    assert resp["Content-Type"] == "text/html; charset=utf-8"
    csp = resp["Content-Security-Policy"]
    assert csp.startswith("sandbox;") and "default-src 'none'" in csp
    assert resp["X-Frame-Options"] == "SAMEORIGIN"
    assert resp["X-Content-Type-Options"] == "nosniff"
    img = client.get(reverse("deliverables-preview", args=[ids["deliverables"]["png"]]))
    assert img["Content-Type"] == "image/png"
    txt = client.get(reverse("deliverables-preview", args=[ids["deliverables"]["txt"]]))
    assert txt["Content-Type"] == "text/plain; charset=utf-8"


def test_preview_refuses_binary_files(client: Client) -> None:
    session = SessionFactory(project="demo", root="/home/dev/projects/demo", session_id="s-1")
    d = make_deliverable(session, make_prompt(session, "x"), "archive.zip", b"PK\x03\x04")
    assert client.get(reverse("deliverables-preview", args=[d.pk])).status_code == 404
    body = client.get(reverse("deliverables-my-work")).content.decode()
    assert "archive.zip" in body and "Preview</summary>" not in body


def test_markdown_links_keep_only_safe_schemes(client: Client) -> None:
    session = SessionFactory(project="demo", root="/home/dev/projects/demo", session_id="s-1")
    md = b"[bad](javascript:alert(1)) [good](https://example.com) <img src=x onerror=alert(1)>"
    make_deliverable(session, make_prompt(session, "x"), "links.md", md)
    body = client.get(reverse("deliverables-my-work")).content.decode()
    assert 'href="javascript:' not in body  # left as plain text
    assert 'href="https://example.com"' in body
    assert "<img src=x" not in body


def test_api_lists_deliverables(client: Client) -> None:
    ids = seed_demo()
    data = client.get("/api/deliverables", {"project": "webshop", "limit": 2}).json()
    assert len(data["deliverables"]) == 2
    row = data["deliverables"][0]
    assert row["project"] == "webshop" and row["prompt_number"] == 1
    assert row["download_url"].endswith(reverse("deliverables-download", args=[row["id"]]))
    assert {r["id"] for r in client.get("/api/deliverables").json()["deliverables"]} == set(
        ids["deliverables"].values()
    )
    assert client.get("/api/deliverables", {"project": "nope"}).json() == {"deliverables": []}
    assert "/api/deliverables" in client.get("/api/openapi.json").json()["paths"]
