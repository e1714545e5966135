"""Team mode: per-user API tokens for a shared worker.

Only the sha256 of a token is stored, with its first characters to recognise it in lists;
the token itself is shown once, when it is made. Tokens are long random strings, so one
unsalted sha256 is enough (nothing to brute-force) and keeps the lookup one indexed read.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from memory.models import ApiToken

TOKEN_PREFIX = "cmem_"
PREFIX_CHARS = 12
# Writing last_used on every hook would add a write to each request of a busy team; a
# minute's precision is enough to tell a live token from a forgotten one.
LAST_USED_PRECISION = timedelta(minutes=1)


class TokenError(ValueError):
    """A token request that cannot be carried out; the message says why."""


def token_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def token_create(*, user: User, name: str = "") -> tuple[ApiToken, str]:
    """Make a token for `user`; returns the row and the raw token (shown once, never stored)."""
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=(name or "hook client")[:100],
        token_hash=token_hash(raw),
        prefix=raw[:PREFIX_CHARS],
    )
    return token, raw


def token_create_for_username(*, username: str, name: str = "") -> tuple[ApiToken, str]:
    """`token_create` for a user named on the command line; the user is made if new."""
    if not username.strip():
        raise TokenError("a user name is required")
    user, _ = get_user_model().objects.get_or_create(username=username.strip())
    return token_create(user=user, name=name)


def token_verify(*, raw: str) -> ApiToken | None:
    """The live token `raw` names, or None when it is unknown or revoked."""
    if not raw.startswith(TOKEN_PREFIX) or len(raw) > 200:
        return None
    token = ApiToken.objects.select_related("user").filter(token_hash=token_hash(raw)).first()
    if token is None or token.revoked or not token.user.is_active:
        return None
    now = timezone.now()
    if token.last_used is None or now - token.last_used >= LAST_USED_PRECISION:
        ApiToken.objects.filter(pk=token.pk).update(last_used=now)
        token.last_used = now
    return token


def token_find(*, ref: str) -> ApiToken:
    """A token by id or by (the start of) its prefix, as `cmem token list` shows them."""
    ref = ref.strip()
    if ref.isdigit():
        found = list(ApiToken.objects.filter(pk=int(ref)))
    else:
        found = list(ApiToken.objects.filter(prefix__startswith=ref[:PREFIX_CHARS])) if ref else []
    if not found:
        raise TokenError(f"no token matches {ref!r}; see `cmem token list`")
    if len(found) > 1:
        raise TokenError(f"{ref!r} matches {len(found)} tokens; give its id")
    return found[0]


@transaction.atomic
def token_revoke(*, token: ApiToken) -> ApiToken:
    """Revoke for good: the next request with it gets a 401."""
    token.revoked = True
    token.save(update_fields=["revoked"])
    return token
