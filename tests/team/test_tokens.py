"""API token services and `cmem token` (team mode)."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from memory.models import ApiToken
from memory.team.tokens import TokenError, token_create, token_find, token_revoke, token_verify

pytestmark = [pytest.mark.django_db, pytest.mark.team]


@pytest.fixture
def alice():  # type: ignore[no-untyped-def]
    return get_user_model().objects.create(username="alice")


def test_create_stores_only_the_hash_and_a_prefix(alice) -> None:  # type: ignore[no-untyped-def]
    token, raw = token_create(user=alice, name="laptop")
    row = ApiToken.objects.get(pk=token.pk)
    assert raw.startswith("cmem_") and len(raw) > 40
    assert row.token_hash == hashlib.sha256(raw.encode()).hexdigest()
    assert raw.startswith(row.prefix) and len(row.prefix) == 12
    stored = [str(v) for v in ApiToken.objects.values_list().get(pk=token.pk)]
    assert raw not in stored


def test_verify_accepts_live_tokens_and_marks_last_used(alice) -> None:  # type: ignore[no-untyped-def]
    token, raw = token_create(user=alice)
    assert token.last_used is None
    found = token_verify(raw=raw)
    assert found is not None and found.pk == token.pk
    first = ApiToken.objects.get(pk=token.pk).last_used
    assert first is not None
    # Within the precision window a second request writes nothing.
    token_verify(raw=raw)
    assert ApiToken.objects.get(pk=token.pk).last_used == first
    ApiToken.objects.filter(pk=token.pk).update(last_used=first - timedelta(minutes=5))
    token_verify(raw=raw)
    assert ApiToken.objects.get(pk=token.pk).last_used > first - timedelta(minutes=5)


def test_verify_refuses_wrong_revoked_and_inactive(alice) -> None:  # type: ignore[no-untyped-def]
    token, raw = token_create(user=alice)
    assert token_verify(raw=raw[:-1] + ("A" if raw[-1] != "A" else "B")) is None
    assert token_verify(raw="") is None
    assert token_verify(raw="not-a-cmem-token") is None
    token_revoke(token=token)
    assert token_verify(raw=raw) is None
    other, raw2 = token_create(user=alice)
    alice.is_active = False
    alice.save()
    assert token_verify(raw=raw2) is None


def test_find_by_id_or_prefix(alice) -> None:  # type: ignore[no-untyped-def]
    token, raw = token_create(user=alice)
    assert token_find(ref=str(token.pk)) == token
    assert token_find(ref=token.prefix) == token
    with pytest.raises(TokenError):
        token_find(ref="cmem_nothere")


def test_command_create_list_revoke() -> None:
    out, err = StringIO(), StringIO()
    call_command("token", "create", "bob", "--name", "desktop", stdout=out, stderr=err)
    raw = out.getvalue().strip()
    token = ApiToken.objects.get()
    assert token.user.username == "bob" and token.name == "desktop"
    assert token_verify(raw=raw) is not None
    assert "shown once" in err.getvalue()

    listing = StringIO()
    call_command("token", "list", stdout=listing)
    assert token.prefix in listing.getvalue() and "active" in listing.getvalue()
    assert raw not in listing.getvalue()

    done = StringIO()
    call_command("token", "revoke", token.prefix, stdout=done)
    assert "revoked" in done.getvalue()
    assert token_verify(raw=raw) is None
    with pytest.raises(CommandError):
        call_command("token", "revoke", "cmem_zzzzzzz", stdout=StringIO())


def test_admin_add_shows_the_token_once_and_revokes(admin_client) -> None:  # type: ignore[no-untyped-def]
    user = get_user_model().objects.get(username="admin")
    resp = admin_client.post(
        "/admin/memory/apitoken/add/", {"user": user.pk, "name": "ci runner"}, follow=True
    )
    assert resp.status_code == 200
    token = ApiToken.objects.get(name="ci runner")
    shown = [str(m) for m in resp.context["messages"]]
    raw = next(word for m in shown for word in m.split() if word.startswith("cmem_"))
    assert token_verify(raw=raw) == token
    listing = admin_client.get("/admin/memory/apitoken/")
    assert token.prefix in listing.content.decode() and raw not in listing.content.decode()
    admin_client.post(
        "/admin/memory/apitoken/", {"action": "revoke_tokens", "_selected_action": [token.pk]}
    )
    assert token_verify(raw=raw) is None
