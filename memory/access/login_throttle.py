"""A throttle on failed admin logins: a small cache-based counter (no extra dependency).

After MAX_FAILURES failed attempts for one username (from any client) within WINDOW_S, further
attempts are refused without checking the password until the window passes. The cache is
Django's default (per-process LocMem; the worker runs one gunicorn process).
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.core.cache import cache
from django.http import HttpRequest

MAX_FAILURES = 5
WINDOW_S = 15 * 60


def _key(username: str) -> str:
    return "cmem-login-fail:" + hashlib.sha256(username.lower().encode()).hexdigest()


def failures(username: str) -> int:
    return int(cache.get(_key(username), 0))


class ThrottledModelBackend(ModelBackend):
    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        name = username or str(kwargs.get("email") or "")
        if name and failures(name) >= MAX_FAILURES:
            return None
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None and name:
            key = _key(name)
            cache.add(key, 0, WINDOW_S)
            try:
                cache.incr(key)
            except ValueError:
                cache.set(key, 1, WINDOW_S)
        return user
