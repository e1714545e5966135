from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from deliverables.models import Deliverable
from memory.housekeeping.observations_prune import observations_prune
from memory.models import (
    ContextCache,
    Event,
    ExcludedProject,
    FileView,
    LedgerEntry,
    Observation,
    ObservationFile,
    Prompt,
    Session,
    Summary,
)
from tests.factories import SessionFactory

pytestmark = pytest.mark.django_db

ADMINISTERED = [
    Session,
    Prompt,
    Event,
    Observation,
    ObservationFile,
    Summary,
    FileView,
    LedgerEntry,
    ContextCache,
    ExcludedProject,
    Deliverable,
]
READ_ONLY = [m for m in ADMINISTERED if m is not ExcludedProject]


def days_ago(days: float):  # type: ignore[no-untyped-def]
    return timezone.now() - timedelta(days=days)


def make_observation(session: Session, title: str, age_days: float) -> Observation:
    obs = Observation.objects.create(
        session=session,
        project=session.project,
        title=title,
        narrative=f"narrative of {title}",
        created=days_ago(age_days),
    )
    ObservationFile.objects.create(
        observation=obs, project=session.project, path="src/app.py", role="read"
    )
    return obs


@pytest.fixture
def one_of_each() -> dict[type, object]:
    session = SessionFactory(project="alpha", session_id="s1", cwd="/src/alpha")
    prompt = Prompt.objects.create(session=session, number=1, text="fix the <b>login</b> bug " * 20)
    obs = make_observation(session, "Found the login bug", 1)
    return {
        Session: session,
        Prompt: prompt,
        Event: Event.objects.create(
            session=session,
            kind="observation",
            tool_name="Read",
            payload={"a": 1},
            last_error="boom " * 40,
        ),
        Observation: obs,
        ObservationFile: obs.files.get(),
        Summary: Summary.objects.create(
            session=session, project="alpha", request="fix login", learned="it was a typo"
        ),
        FileView: FileView.objects.create(
            session=session, path="/src/alpha/app.py", partial=True, offset=1, limit=20
        ),
        LedgerEntry: LedgerEntry.objects.create(
            session=session, project="alpha", kind="gate_deny", path="/x", tokens_avoided=900
        ),
        ContextCache: ContextCache.objects.create(
            project="alpha", text="# index\n" * 50, tokens=120
        ),
        ExcludedProject: ExcludedProject.objects.create(glob="~/secret/**", note="client work"),
        Deliverable: Deliverable.objects.create(
            session=session,
            prompt=prompt,
            project="alpha",
            original_path="/tmp/report.pdf",
            stored_path="alpha/report.pdf",
            size=2048,
            sha256="ab" * 32,
        ),
    }


def test_every_model_is_registered() -> None:
    for model in ADMINISTERED:
        assert admin.site.is_registered(model), model


@pytest.mark.parametrize("model", ADMINISTERED, ids=lambda m: m.__name__)
def test_changelist_and_change_page_load(admin_client, one_of_each, model) -> None:  # type: ignore[no-untyped-def]
    opts = model._meta
    listing = admin_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
    assert listing.status_code == 200
    assert listing.context["cl"].result_count == 1
    obj = one_of_each[model]
    detail = admin_client.get(
        reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
    )  # type: ignore[attr-defined]
    assert detail.status_code == 200


def test_changelists_filter_and_search(admin_client, one_of_each) -> None:  # type: ignore[no-untyped-def]
    url = reverse("admin:memory_observation_changelist")
    assert admin_client.get(url, {"q": "login"}).context["cl"].result_count == 1
    assert admin_client.get(url, {"q": "nothing-like-this"}).context["cl"].result_count == 0
    assert admin_client.get(url, {"project": "alpha"}).context["cl"].result_count == 1


@pytest.mark.parametrize("model", READ_ONLY, ids=lambda m: m.__name__)
def test_log_like_models_are_read_only(admin_client, one_of_each, model) -> None:  # type: ignore[no-untyped-def]
    opts = model._meta
    add = admin_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_add"))
    assert add.status_code == 403
    obj = one_of_each[model]
    detail = admin_client.get(
        reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk])
    )  # type: ignore[attr-defined]
    assert b'name="_save"' not in detail.content


def test_previews_are_truncated(admin_client, one_of_each) -> None:  # type: ignore[no-untyped-def]
    page = admin_client.get(reverse("admin:memory_prompt_changelist")).content.decode()
    assert "fix the &lt;b&gt;login&lt;/b&gt; bug" in page  # escaped, never raw HTML
    assert "fix the <b>login</b> bug " * 5 not in page


def test_excluded_projects_are_editable_and_honoured(admin_client) -> None:  # type: ignore[no-untyped-def]
    from memory.projects import is_excluded

    resp = admin_client.post(
        reverse("admin:memory_excludedproject_add"), {"glob": "/work/secret/**", "note": "nda"}
    )
    assert resp.status_code == 302
    assert ExcludedProject.objects.get().glob == "/work/secret/**"
    assert is_excluded("/work/secret/app")
    assert not is_excluded("/work/public/app")


def test_excluded_projects_page_names_the_setting_globs(admin_client, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CLAUDE_MEM_EXCLUDED_PROJECTS", "*-private")
    page = admin_client.get(reverse("admin:memory_excludedproject_changelist"))
    assert "*-private" in page.content.decode()


@pytest.fixture
def aging() -> dict[str, object]:
    """Old and new rows in two projects, plus finished and pending old queue events."""
    alpha, beta = (
        SessionFactory(project="alpha", session_id="a", cwd="/src/alpha"),
        SessionFactory(project="beta", session_id="b", cwd="/src/beta"),
    )
    old_event = Event.objects.create(
        session=alpha, kind="observation", status="done", created=days_ago(40)
    )
    pending = Event.objects.create(
        session=alpha, kind="observation", status="pending", created=days_ago(40)
    )
    return {
        "alpha_old": make_observation(alpha, "alpha old", 40),
        "alpha_new": make_observation(alpha, "alpha new", 2),
        "beta_old": make_observation(beta, "beta old", 40),
        "alpha_old_summary": Summary.objects.create(
            session=alpha, project="alpha", request="old", created=days_ago(40)
        ),
        "alpha_new_summary": Summary.objects.create(
            session=alpha, project="alpha", request="new", created=days_ago(1)
        ),
        "old_event": old_event,
        "pending_event": pending,
        "alpha": alpha,
    }


def test_prune_service_deletes_only_old_rows_of_the_project(aging) -> None:  # type: ignore[no-untyped-def]
    report = observations_prune(older_than_days=30, project="alpha", dry_run=False)
    assert (report.observations, report.summaries, report.events) == (1, 1, 1)
    assert set(Observation.objects.values_list("title", flat=True)) == {"alpha new", "beta old"}
    assert set(Summary.objects.values_list("request", flat=True)) == {"new"}
    assert list(Event.objects.values_list("status", flat=True)) == ["pending"]
    assert ObservationFile.objects.count() == 2  # the pruned observation's file row went with it
    assert Session.objects.count() == 2 and Prompt.objects.count() == 0


def test_prune_dry_run_counts_without_deleting(aging) -> None:  # type: ignore[no-untyped-def]
    report = observations_prune(older_than_days=30, project=None, dry_run=True)
    assert (report.observations, report.summaries, report.events) == (2, 1, 1)
    assert report.projects == ("alpha", "beta")
    assert Observation.objects.count() == 3


def test_prune_rejects_a_negative_age() -> None:
    with pytest.raises(ValueError):
        observations_prune(older_than_days=-1, project=None, dry_run=True)


def test_prune_action_shows_a_form_then_deletes(admin_client, aging) -> None:  # type: ignore[no-untyped-def]
    url = reverse("admin:memory_observation_changelist")
    selected = [aging["alpha_old"].pk]
    page = admin_client.post(
        url, {"action": "prune_observations", "_selected_action": selected, "index": 0}
    )
    assert page.status_code == 200
    assert b"Prune old memory" in page.content
    assert (
        page.context["form"].initial["project"] == "alpha"
    )  # the selection preselects its project
    assert Observation.objects.count() == 3

    preview = admin_client.post(
        url,
        {
            "action": "prune_observations",
            "_selected_action": selected,
            "older_than_days": 30,
            "project": "alpha",
            "preview": "1",
        },
    )
    assert (
        b"Would delete 1 observations, 1 summaries and 1 finished queue events" in preview.content
    )
    assert Observation.objects.count() == 3

    done = admin_client.post(
        url,
        {
            "action": "prune_observations",
            "_selected_action": selected,
            "older_than_days": 30,
            "project": "alpha",
            "apply": "1",
        },
    )
    assert done.status_code == 302
    assert set(Observation.objects.values_list("title", flat=True)) == {"alpha new", "beta old"}
    assert Event.objects.filter(pk=aging["pending_event"].pk).exists()
    assert "Deleted 1 observations" in admin_client.get(done.url).content.decode()


def test_prune_action_rejects_a_bad_age_without_deleting(admin_client, aging) -> None:  # type: ignore[no-untyped-def]
    url = reverse("admin:memory_observation_changelist")
    resp = admin_client.post(
        url,
        {
            "action": "prune_observations",
            "_selected_action": [aging["beta_old"].pk],
            "older_than_days": -3,
            "project": "",
            "apply": "1",
        },
    )
    assert resp.status_code == 200 and resp.context["form"].errors
    assert Observation.objects.count() == 3


def test_prune_page_without_a_selection_prunes_every_project(admin_client, aging) -> None:  # type: ignore[no-untyped-def]
    url = reverse("admin:memory_observation_prune")
    assert admin_client.get(url).status_code == 200
    resp = admin_client.post(url, {"older_than_days": 30, "project": "", "apply": "1"})
    assert resp.status_code == 302
    assert list(Observation.objects.values_list("title", flat=True)) == ["alpha new"]


def test_prune_page_needs_staff(client) -> None:  # type: ignore[no-untyped-def]
    resp = client.get(reverse("admin:memory_observation_prune"))
    assert resp.status_code == 302 and "/admin/login/" in resp.url


def test_ensure_admin_creates_a_local_login_once(data_dir, client) -> None:  # type: ignore[no-untyped-def]
    import io
    import stat

    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    out = io.StringIO()
    call_command("ensure_admin", stdout=out)
    password_file = data_dir / "admin-password"
    assert "Created the admin login" in out.getvalue() and str(password_file) in out.getvalue()
    assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    password = password_file.read_text().strip()
    assert len(password) >= 16
    assert client.login(username="admin", password=password)
    assert client.get(reverse("admin:index")).status_code == 200

    again = io.StringIO()
    call_command("ensure_admin", stdout=again)
    assert (
        "password in" in again.getvalue() and "cmem manage changepassword admin" in again.getvalue()
    )
    assert password_file.read_text().strip() == password  # not reset behind the user's back
    assert get_user_model().objects.count() == 1


def test_ensure_admin_leaves_an_existing_superuser_alone(data_dir, admin_user) -> None:  # type: ignore[no-untyped-def]
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command("ensure_admin", stdout=out)
    assert f"cmem manage changepassword {admin_user.username}" in out.getvalue()
    assert not (data_dir / "admin-password").exists()


def test_admin_is_branded_cmem_and_shows_json_fields_indented(admin_client: Client) -> None:
    from memory.models import Event

    session = SessionFactory(project="webshop")
    event = Event.objects.create(
        session=session,
        kind=Event.Kind.OBSERVATION,
        tool_name="Edit",
        payload={"tool_input": {"file_path": "shop/checkout.py", "old": "<b>x</b>"}},
    )
    index = admin_client.get("/admin/").content.decode()
    assert "<title>Everything cmem stored | cmem</title>" in index
    assert "cmem admin" in index and "Django administration" not in index
    assert "css/cmem-admin.css" in index
    page = admin_client.get(f"/admin/memory/event/{event.pk}/change/")
    assert page.status_code == 200
    body = page.content.decode()
    # Indented JSON in a <pre>, its markup escaped, not one compact line.
    assert (
        '<pre class="cmem-json">{\n  &quot;tool_input&quot;: {\n    &quot;file_path&quot;' in body
    )
    assert "&lt;b&gt;x&lt;/b&gt;" in body
    assert '{"tool_input": {"file_path"' not in body
