"""The local worker answers only its owner.

In local mode (no team tokens) every request except `GET /api/health`, `/auth/` and static
files must show one of:
- it arrived on the Unix socket `<data dir>/worker.sock` (cmem_site/wsgi.py marks it from the
  accepted socket's family; a TCP client cannot set that mark);
- `Authorization: Bearer <secret>` with the secret in `<data dir>/worker.secret` (0600);
- the owner's session cookie, set by `/auth/?token=…` from a one-time token (`cmem open`).
Otherwise /api/* answers 401 JSON before any view runs (nothing is stored) and pages 403.
Team mode (memory/team/auth.py) authenticates per user instead, so this gate steps aside.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from collections.abc import Callable

from django.contrib.auth import get_user_model, login
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden, JsonResponse
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme

from memory import config
from memory.runtime import credentials
from memory.team.auth import bearer_token, token_required

OPEN_PATHS = frozenset({"/api/health", "/auth"})
ADMIN_PREFIX = "/admin/"
OPEN_PREFIXES = ("/static/", "/favicon")
SESSION_KEY = "cmem_owner"
OWNER_ADMIN_KEY = "cmem_owner_admin"  # the admin user was signed in for the owner's browser


# (lstat stamp, secret) of the last read of worker.secret: see _secret().
_secret_memo: tuple[tuple[object, ...], str] | None = None


def _secret() -> str:
    """credentials.read_secret(), memoised on the file's lstat: every API call over TCP
    compares its bearer with the secret, and opening and reading the file each time cost
    ~28 µs. The stamp holds what read_secret checks (a regular file, ours,
    0600) plus inode, mtime, ctime and size, so a replaced, rewritten, loosened or removed
    secret is read afresh; a file changed in the last two seconds is always re-read."""
    global _secret_memo
    path = str(credentials.secret_path())
    try:
        st = os.lstat(path)
    except OSError:
        return ""
    if (
        not stat.S_ISREG(st.st_mode)
        or st.st_uid != os.getuid()
        or st.st_mode & 0o077
        or not config.stat_settled(max(st.st_mtime_ns, st.st_ctime_ns))
    ):
        return credentials.read_secret()
    key = (
        path,
        st.st_dev,
        st.st_ino,
        st.st_mtime_ns,
        st.st_ctime_ns,
        st.st_size,
        st.st_mode,
        st.st_uid,
    )
    memo = _secret_memo
    if memo is not None and memo[0] == key:
        return memo[1]
    secret = credentials.read_secret()
    _secret_memo = (key, secret)
    return secret


def bearer_matches(offered: str) -> bool:
    """The Bearer credential offered is the owner's secret (compared in constant time)."""
    expected = _secret()
    return bool(expected) and bool(offered) and hmac.compare_digest(expected, offered)


def _session_mark() -> str:
    # Bound to the current secret: deleting worker.secret logs every browser out.
    secret = _secret()
    return hashlib.sha256(f"cmem-owner:{secret}".encode()).hexdigest() if secret else ""


def is_owner(request: HttpRequest) -> bool:
    if request.META.get(credentials.OWNER_SOCKET_ENVIRON) is True:
        return True
    offered = bearer_token(request)
    if offered:
        return bearer_matches(offered)
    session = getattr(request, "session", None)
    mark = _session_mark()
    return bool(mark) and session is not None and session.get(SESSION_KEY) == mark


class OwnerOnlyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # The socket's mark first: it is the hook's path, and it costs no settings read.
        if request.META.get(credentials.OWNER_SOCKET_ENVIRON) is True:
            request.cmem_owner = True  # type: ignore[attr-defined]
            return self.get_response(request)
        path = request.path_info
        request.cmem_owner = False  # type: ignore[attr-defined]
        # ApiTokenMiddleware (just above in the chain) answered it for this request.
        required = getattr(request, "cmem_token_required", None)
        if required is None:
            required = token_required()
        if required:
            return self.get_response(request)
        if is_owner(request):
            request.cmem_owner = True  # type: ignore[attr-defined]
            if path.startswith(ADMIN_PREFIX):
                owner_admin_login(request)
            return self.get_response(request)
        if path.rstrip("/") in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
            return self.get_response(request)
        if path.startswith("/api/"):
            response = JsonResponse(
                {
                    "error": "this worker answers only its owner: send 'Authorization: Bearer "
                    "<secret from worker.secret>' or use the Unix socket"
                },
                status=401,
            )
            response["WWW-Authenticate"] = 'Bearer realm="cmem"'
            return response
        return HttpResponseForbidden(
            "<h1>403: cmem answers only its owner</h1><p>Run <code>cmem open</code> to log "
            "this browser in.</p>"
        )


def owner_admin_login(request: HttpRequest) -> None:
    """The owner's browser (signed in by `cmem open`) opens the admin without a second
    password: it is signed in as the local superuser, made once (user admin) if there is none. Only a
    session from the one-time link counts, not the socket or the bearer secret (scripts and
    tests keep Django's own login), and team mode never gets here (staff log in there)."""
    user = getattr(request, "user", None)
    session = getattr(request, "session", None)
    if user is None or user.is_authenticated or session is None:
        return
    if not session.get(SESSION_KEY):
        return
    users = get_user_model()
    admin = users.objects.filter(is_superuser=True, is_active=True).order_by("pk").first()
    if admin is None:
        # The user `cmem setup` would have made (ensure_admin), without a password: the
        # owner's browser needs none, and `cmem manage changepassword admin` sets one.
        admin = users.objects.filter(username="admin").first() or users(username="admin")
        admin.is_staff = admin.is_superuser = admin.is_active = True
        if not admin.pk:
            admin.set_unusable_password()
        admin.save()
    login(request, admin, backend="django.contrib.auth.backends.ModelBackend")
    # login() cycles the session; the owner's mark travels with it, so the pages stay open.
    session[OWNER_ADMIN_KEY] = True


def signed_in_as_owner(request: HttpRequest) -> bool:
    """The user was signed in by owner_admin_login, not by a login of their own: the pages
    leave the owner's rows unowned, like the hooks' rows on this worker."""
    session = getattr(request, "session", None)
    return session is not None and bool(session.get(OWNER_ADMIN_KEY))


def owner_login(request: HttpRequest) -> HttpResponse:
    """`/auth/?token=…&next=/…`: redeem a one-time token, set the owner's session cookie."""
    token = request.GET.get("token", "")
    if not credentials.login_token_redeem(token):
        return HttpResponseForbidden(
            "<h1>403: this login link was used or has expired</h1><p>Run <code>cmem open</code> "
            "for a new one.</p>"
        )
    request.session.cycle_key()  # a fresh session id: no fixation
    request.session[SESSION_KEY] = _session_mark()
    target = request.GET.get("next") or "/"
    if not url_has_allowed_host_and_scheme(target, allowed_hosts=None) or not target.startswith(
        "/"
    ):
        target = "/"
    return redirect(target)
