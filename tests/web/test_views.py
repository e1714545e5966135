from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.html import strip_tags

from memory import config
from memory.dashboard.feed import FEED_PAGE_SIZE
from memory.models import ContextCache, LedgerEntry, Observation, ObservationFile
from memory.retrieval.search.query import SearchQuery
from memory.retrieval.search.service import search
from tests.browser.seed import (
    XSS,
    make_observation,
    make_prompt,
    make_summary,
    seed_demo,
)
from tests.factories import SessionFactory
from tests.support import CLAUDE_FIXTURES

pytestmark = pytest.mark.django_db


@pytest.fixture
def csrf_client() -> Client:
    return Client(enforce_csrf_checks=True)


def test_timeline_empty_state(client: Client) -> None:
    resp = client.get("/")
    assert resp.status_code == 200
    assert b"No memory yet" in resp.content


def test_timeline_shows_prompts_observations_and_summaries(client: Client) -> None:
    seed_demo()
    body = client.get("/").content.decode()
    assert "Fix the checkout rounding bug" in body
    assert "Checkout total rounded before tax" in body
    assert "shop/checkout.py" in body
    assert "Ship the fix to staging." in body
    assert "Login hashes the password twice" in body
    assert 'data-live-url="/live/"' in body


def test_timeline_filters_by_project_type_and_text(client: Client) -> None:
    seed_demo()
    body = client.get("/", {"project": "api-server"}).content.decode()
    assert "Login hashes the password twice" in body
    assert "Checkout total rounded" not in body

    body = client.get("/", {"type": "bugfix"}).content.decode()
    assert "Checkout total rounded before tax" in body
    assert "Added a regression test" not in body
    assert "Fix the checkout rounding bug" not in body  # prompts hide under a type filter

    body = client.get("/", {"q": "regression"}).content.decode()
    assert "Added a regression test for rounding" in body
    assert "Login hashes" not in body


def test_timeline_filters_by_date_range(client: Client) -> None:
    session = SessionFactory(project="demo", root="/home/dev/projects/demo", session_id="s-1")
    make_prompt(session, "old prompt", minutes_ago=60 * 24 * 10)
    make_observation(session, "Ten days old", minutes_ago=60 * 24 * 10)
    make_observation(session, "From today")
    today = timezone.localdate()
    body = client.get("/", {"date_from": today.isoformat()}).content.decode()
    assert "From today" in body and "Ten days old" not in body
    body = client.get("/", {"date_to": (today - timedelta(days=5)).isoformat()}).content.decode()
    assert "Ten days old" in body and "From today" not in body


def test_timeline_no_match_empty_state(client: Client) -> None:
    seed_demo()
    body = client.get("/", {"q": "zzzznothing"}).content.decode()
    assert "Nothing matches these filters" in body


def test_timeline_paginates(client: Client) -> None:
    session = SessionFactory(project="demo", root="/home/dev/projects/demo", session_id="s-1")
    for i in range(FEED_PAGE_SIZE + 5):
        make_observation(session, f"Observation number {i:03d}", minutes_ago=1000 - i)
    first = client.get("/").content.decode()
    assert "Observation number 044" in first
    assert "Observation number 000" not in first
    assert "Older →" in first
    second = client.get("/", {"page": 2}).content.decode()
    assert "Observation number 000" in second
    assert "Observation number 044" not in second


def test_untrusted_text_is_escaped_everywhere(client: Client) -> None:
    session = SessionFactory(project=f"p{XSS}", root="/home/dev/projects/demo", session_id="s-1")
    prompt = make_prompt(session, f"please {XSS}")
    obs = make_observation(
        session,
        f"title {XSS}",
        subtitle=XSS,
        narrative=XSS,
        facts=[XSS],
        concepts=[XSS],
        files_modified=[f"/tmp/{XSS}.py"],
        files_read=[XSS],
    )
    make_summary(session, request=XSS, completed=XSS, next_steps=XSS)
    pages = [
        "/",
        reverse("memory-observation-detail", args=[obs.pk]),
        reverse("memory-session-detail", args=[session.pk]),
        reverse("deliverables-my-work"),
        reverse("memory-search") + "?q=please",
        reverse("memory-observation-forget", args=[obs.pk]),
    ]
    for url in pages:
        body = client.get(url).content.decode()
        assert "<script>alert" not in body, url
        assert "&lt;script&gt;" in body, url
    assert prompt.pk


def test_observation_detail(client: Client) -> None:
    ids = seed_demo()
    body = client.get(
        reverse("memory-observation-detail", args=[ids["observations"][0]])
    ).content.decode()
    assert "Checkout total rounded before tax" in body
    assert "The total was rounded before tax was applied." in body
    assert "round() ran first" in body
    assert "Fix the checkout rounding bug" in body  # the prompt that produced it
    assert client.get(reverse("memory-observation-detail", args=[999999])).status_code == 404


def test_session_detail_groups_turns(client: Client) -> None:
    ids = seed_demo()
    body = client.get(reverse("memory-session-detail", args=[ids["sessions"][0]])).content.decode()
    assert "Prompt #1" in body
    assert "Added a regression test for rounding" in body
    assert "CHANGES.md" in body
    assert "Rounding happens after tax now." in body


def test_forget_needs_post_with_csrf(csrf_client: Client) -> None:
    ids = seed_demo()
    pk = ids["observations"][0]
    url = reverse("memory-observation-forget", args=[pk])
    page = csrf_client.get(url)
    assert page.status_code == 200 and b"Forget this observation?" in page.content
    assert Observation.objects.filter(pk=pk).exists()  # GET only asks
    assert csrf_client.post(url).status_code == 403  # no token
    assert Observation.objects.filter(pk=pk).exists()


def test_forget_deletes_and_drops_from_search(client: Client) -> None:
    ids = seed_demo()
    pk = ids["observations"][0]
    ContextCache.objects.create(project="webshop", text="cached index")
    assert any(h.id == pk for h in search(SearchQuery(text="rounded", kinds=("observation",))))
    resp = client.post(reverse("memory-observation-forget", args=[pk]))
    assert resp.status_code == 302
    assert not Observation.objects.filter(pk=pk).exists()
    assert not ObservationFile.objects.filter(observation_id=pk).exists()
    assert not any(h.id == pk for h in search(SearchQuery(text="rounded", kinds=("observation",))))
    assert "Forgot observation" in client.get("/").content.decode()


def test_live_endpoint_returns_only_newer_rows(client: Client) -> None:
    ids = seed_demo()
    last_obs = max(ids["observations"])
    data = client.get(
        reverse("memory-live"), {"obs": last_obs, "sum": 10**6, "prompt": 10**6}
    ).json()
    assert data["count"] == 0 and data["html"] == ""
    session = SessionFactory(project="fresh", root="/home/dev/projects/demo", session_id="s-new")
    new = make_observation(session, f"Brand new {XSS}")
    data = client.get(
        reverse("memory-live"), {"obs": last_obs, "sum": 10**6, "prompt": 10**6}
    ).json()
    assert data["count"] == 1
    assert data["obs"] == new.pk
    assert "Brand new" in data["html"] and "<script>alert" not in data["html"]
    # Project filter.
    data = client.get(
        reverse("memory-live"),
        {"obs": last_obs, "sum": 10**6, "prompt": 10**6, "project": "webshop"},
    ).json()
    assert data["count"] == 0


def test_live_endpoint_tolerates_bad_ids(client: Client) -> None:
    resp = client.get(reverse("memory-live"), {"obs": "x", "sum": "-3"})
    assert resp.status_code == 200


def test_search_page(client: Client) -> None:
    seed_demo()
    body = client.get(reverse("memory-search"), {"q": "password"}).content.decode()
    assert "Login hashes the password twice" in body
    body = client.get(reverse("memory-search"), {"q": "qqqqzzz"}).content.decode()
    assert "No results" in body
    assert client.get(reverse("memory-search")).status_code == 200


def test_settings_page_renders_every_key(client: Client) -> None:
    """Basic settings first, by their words alone; every other page setting under a
    collapsed Advanced section with its key; hidden ones only in the file (issue 35)."""
    from memory.config.registry import REGISTRY

    body = client.get(reverse("memory-settings")).content.decode()
    assert "csrfmiddlewaretoken" in body
    basic = body[body.index('id="basic-settings"') : body.index('id="advanced-settings"')]
    advanced = body[body.index('id="advanced-settings"') : body.index('id="save-bar"')]
    assert '<details class="advanced-settings" id="advanced-settings">' in body  # collapsed
    for record in REGISTRY:
        if record.hidden:
            assert f'id="setting-{record.key}"' not in body, record.key
        elif record.basic:
            assert f'id="setting-{record.key}"' in basic, record.key
        else:
            assert f'id="setting-{record.key}"' in advanced and record.key in advanced
    assert sum(1 for r in REGISTRY if r.basic) == 10
    # Visible text only: the keys stay in the fields' names and ids.
    assert "CLAUDE_MEM_" not in strip_tags(basic) and "`" not in strip_tags(basic)
    # Enums are selects: the Codex shell gate offers its three words.
    codex = advanced[advanced.index('id="setting-CLAUDE_MEM_CODEX_SHELL_READ_GATE"') :][:1500]
    assert "<select" in codex and '<option value="deny"' in codex


def test_a_hidden_setting_survives_a_save_and_an_advanced_error_opens_the_section(
    client: Client,
) -> None:
    config.save({"CLAUDE_MEM_INSTALL_ROUTE": "plugin:cmem"})
    assert client.post(reverse("memory-settings"), _settings_post()).status_code == 302
    assert json.loads(config.settings_path().read_text())["CLAUDE_MEM_INSTALL_ROUTE"] == (
        "plugin:cmem"
    )
    body = client.post(
        reverse("memory-settings"), _settings_post(CLAUDE_MEM_RETENTION_DAYS="lots")
    ).content.decode()
    assert '<details class="advanced-settings" id="advanced-settings" open>' in body


def _settings_post(**changes: str) -> dict[str, str]:
    from memory.forms import SettingsForm

    form = SettingsForm(current=config.load())
    data: dict[str, str] = {}
    for key, field in form.fields.items():
        if field.disabled:
            continue
        value = form.initial.get(key)
        if isinstance(value, bool):
            if value:
                data[key] = "on"
        elif value is not None:
            data[key] = str(value)
    data.update(changes)
    return data


def test_settings_save_validates_and_writes(client: Client) -> None:
    ContextCache.objects.create(project="webshop", text="old index")
    resp = client.post(
        reverse("memory-settings"), _settings_post(CLAUDE_MEM_CONTEXT_OBSERVATIONS="12")
    )
    assert resp.status_code == 302
    saved = json.loads(config.settings_path().read_text())
    assert saved["CLAUDE_MEM_CONTEXT_OBSERVATIONS"] == "12"
    assert not ContextCache.objects.filter(project="webshop").exists()

    bad = _settings_post(CLAUDE_MEM_CONTEXT_OBSERVATIONS="lots", CLAUDE_MEM_READ_GATE="sometimes")
    resp = client.post(reverse("memory-settings"), bad)
    assert resp.status_code == 200
    body = resp.content.decode()
    assert "Enter a whole number." in body
    assert "Select a valid choice." in body
    assert json.loads(config.settings_path().read_text())["CLAUDE_MEM_CONTEXT_OBSERVATIONS"] == "12"


def test_settings_booleans_round_trip(client: Client) -> None:
    data = _settings_post()
    data.pop("CLAUDE_MEM_DELIVERABLES_ENABLED", None)  # an unticked box sends nothing
    assert client.post(reverse("memory-settings"), data).status_code == 302
    assert (
        json.loads(config.settings_path().read_text())["CLAUDE_MEM_DELIVERABLES_ENABLED"] == "false"
    )
    assert config.get_bool("CLAUDE_MEM_DELIVERABLES_ENABLED") is False


def test_settings_env_keys_are_not_editable(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_CONTEXT_OBSERVATIONS", "7")
    body = client.get(reverse("memory-settings")).content.decode()
    assert "set by environment" in body
    client.post(reverse("memory-settings"), _settings_post(CLAUDE_MEM_CONTEXT_OBSERVATIONS="99"))
    saved = json.loads(config.settings_path().read_text())
    assert saved.get("CLAUDE_MEM_CONTEXT_OBSERVATIONS") != "99"


def test_provider_urls_and_keys_cannot_be_changed_or_read_from_the_form(client: Client) -> None:
    config.save(
        {
            "CLAUDE_MEM_OPENAI_BASE_URL": "http://127.0.0.1:11434/v1",
            "CLAUDE_MEM_OPENROUTER_API_KEY": "sk-or-v1-never-shown-on-a-page-123",
        }
    )
    body = client.get(reverse("memory-settings")).content.decode()
    assert "sk-or-v1-never-shown" not in body
    hostile = _settings_post(
        CLAUDE_MEM_OPENAI_BASE_URL="http://attacker.invalid/v1",
        CLAUDE_MEM_OPENROUTER_API_KEY="sk-or-v1-attacker",
        CLAUDE_MEM_ANTHROPIC_BASE_URL="http://attacker.invalid",
        CLAUDE_MEM_CLAUDE_PATH="/tmp/evil",
        CLAUDE_MEM_PROVIDER="openai-compatible",
    )
    # Refused server-side: the form answers with its errors and saves nothing of it.
    assert client.post(reverse("memory-settings"), hostile).status_code == 200
    saved = json.loads(config.settings_path().read_text())
    assert "CLAUDE_MEM_PROVIDER" not in saved
    chosen = _settings_post(CLAUDE_MEM_PROVIDER="openai-compatible")
    assert client.post(reverse("memory-settings"), chosen).status_code == 302
    saved = json.loads(config.settings_path().read_text())
    assert saved["CLAUDE_MEM_OPENAI_BASE_URL"] == "http://127.0.0.1:11434/v1"
    assert saved["CLAUDE_MEM_OPENROUTER_API_KEY"] == "sk-or-v1-never-shown-on-a-page-123"
    assert "CLAUDE_MEM_ANTHROPIC_BASE_URL" not in saved
    assert saved.get("CLAUDE_MEM_CLAUDE_PATH", "") != "/tmp/evil"
    assert saved["CLAUDE_MEM_PROVIDER"] == "openai-compatible"  # the choice itself is a setting


def test_settings_post_requires_csrf(csrf_client: Client) -> None:
    assert csrf_client.post(reverse("memory-settings"), _settings_post()).status_code == 403


def test_context_preview(client: Client) -> None:
    seed_demo()
    data = client.get(reverse("memory-context-preview"), {"project": "webshop"}).json()
    assert data["project"] == "webshop"
    assert "webshop" in data["text"]
    assert client.get(reverse("memory-context-preview")).status_code == 400
    body = client.get(reverse("memory-settings"), {"project": "webshop"}).content.decode()
    assert "SessionStart preview" in body and "recent context" in body


def test_stats_page_charts_ledger_and_observations(client: Client) -> None:
    session = SessionFactory(project="demo", root="/home/dev/projects/demo", session_id="s-1")
    make_observation(session, "one")
    make_observation(session, "two", minutes_ago=60 * 24 * 2)
    LedgerEntry.objects.create(
        project="demo", kind=LedgerEntry.Kind.GATE_DENY, tokens_avoided=5000, tokens_shown=300
    )
    LedgerEntry.objects.create(project="demo", kind=LedgerEntry.Kind.INJECTION, tokens_shown=1200)
    LedgerEntry.objects.create(project="demo", kind=LedgerEntry.Kind.OBSERVER, tokens_spent=800)
    resp = client.get(reverse("memory-stats"))
    assert resp.status_code == 200
    stats = resp.context["stats"]
    assert stats.totals == {
        "saved": 5000,
        "injected": 1500,
        "spent": 800,
        "net": 2700,
        "observations": 2,
    }
    body = resp.content.decode()
    assert body.count("<svg") == 4
    assert "<rect" in body


def test_stats_empty(client: Client) -> None:
    body = client.get(reverse("memory-stats"), {"days": "7"}).content.decode()
    assert "Nothing recorded in this range yet." in body
    assert '<option value="7" selected>' in body
    assert '<option value="30" selected>' in client.get(reverse("memory-stats")).content.decode()


def test_non_loopback_host_is_refused(client: Client) -> None:
    assert client.get("/", HTTP_HOST="evil.example").status_code == 400
    assert client.get("/", HTTP_HOST="127.0.0.1:37777").status_code == 200


def test_static_files_are_found() -> None:
    from django.contrib.staticfiles import finders

    assert finders.find("css/cmem.css")
    assert finders.find("js/cmem.js")


def test_the_dashboard_says_which_provider_and_why(
    client: Client, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    body = client.get(reverse("memory-timeline")).content.decode()
    assert 'id="observer-provider">Observer: offline (no API key: no Anthropic key' in body
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-dashboard-0123456789")
    body = client.get(reverse("memory-stats")).content.decode()
    assert (
        "Observer: anthropic (auto: Anthropic API key from ANTHROPIC_API_KEY (environment))" in body
    )
    assert "sk-ant-dashboard" not in body


def test_session_start_outside_a_project_creates_no_project_until_capture(
    tmp_path: Path,
) -> None:
    """A SessionStart from a scratch folder (like /tmp) lists no project; its first prompt does."""
    hooks = Client(enforce_csrf_checks=True)
    scratch = tmp_path / "scratchpad-folder"
    scratch.mkdir()
    start = json.loads((CLAUDE_FIXTURES / "SessionStart.json").read_text())
    start.update(cwd=str(scratch), session_id="phantom-1", source="startup")
    resp = hooks.post(
        "/api/hooks/claude-code/context", data=json.dumps(start), content_type="application/json"
    )
    assert resp.status_code == 200
    page = Client()
    for url in ("/search/", "/settings/", "/work/"):
        body = page.get(url).content.decode()
        assert "scratchpad-folder" not in body, url
    prompt = json.loads((CLAUDE_FIXTURES / "UserPromptSubmit.json").read_text())
    prompt.update(cwd=str(scratch), session_id="phantom-1", prompt="now something is captured")
    resp = hooks.post(
        "/api/hooks/claude-code/session-init",
        data=json.dumps(prompt),
        content_type="application/json",
    )
    assert resp.status_code == 200
    assert '<option value="scratchpad-folder"' in page.get("/search/").content.decode()


def test_without_search_by_meaning_the_search_page_offers_words_only(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.retrieval import embeddings

    monkeypatch.setattr(embeddings, "missing", lambda: ("numpy",))
    body = client.get(reverse("memory-search"), {"q": "anything"}).content.decode()
    assert "Words and meaning" not in body and "Meaning only" not in body
    assert 'id="words-only"' in body and 'id="mode-note"' not in body
    # An old link asking for meaning still searches, by words.
    resp = client.get(reverse("memory-search"), {"q": "anything", "mode": "semantic"})
    assert resp.status_code == 200 and resp.context["searched"]
    monkeypatch.setattr(embeddings, "missing", lambda: ())
    assert "Words and meaning" in client.get(reverse("memory-search")).content.decode()


def test_page_prose_turns_commands_into_code_and_keys_into_labels() -> None:
    from memory.templatetags.memory_extras import prose

    text = prose("auto: CLAUDE_MEM_PROVIDER=anthropic, no logged-in `claude` CLI <b>")
    assert text == (
        "auto: the “Observer provider” setting is anthropic, no logged-in "
        "<code>claude</code> CLI &lt;b&gt;"
    )
    assert "`" not in prose("a stray ` tick") and prose("CLAUDE_MEM_NOPE") == "CLAUDE_MEM_NOPE"
