"""Team mode: token authentication for the HTTP API.

A shared worker is reachable by everyone on the network, so every `/api/` call must carry
`Authorization: Bearer <token>` of a live ApiToken (see memory/team/tokens.py); otherwise it is
answered 401 before any view runs, so nothing is stored. Health stays open: the hook
client and load balancers probe it. Pages then need a staff login (the admin's), and a
staff user sees every user's rows there. A token's request runs inside `viewer_scope`, so
it reads and writes only its own user's rows (memory/team/scope.py).

Off for the local single-user default (the worker binds loopback only); on with
CLAUDE_MEM_REQUIRE_TOKEN=true, and always when the worker binds a non-loopback address.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, JsonResponse

from memory import config
from memory.models import ApiToken
from memory.projects import request_remote_scope
from memory.protocol.netpolicy import is_loopback

OPEN_API_PATHS = frozenset({"/api/health"})
OPEN_PAGE_PREFIXES = ("/admin/", "/static/", "/favicon")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class TokenRequest(HttpRequest):
    api_token: ApiToken | None


# (inputs, answer) of the last token_required(): see _required_key.
_required_memo: tuple[tuple[object, ...], bool] | None = None


def _required_key() -> tuple[object, ...] | None:
    """What token_required() depends on, cheaply: its two variables in the environment and
    the settings file's (path, inode, mtime, ctime, size). None while the file is missing or was
    changed in the last two seconds (file times tick coarsely; memory.config.read_file
    re-reads such a file too), so the answer is then computed afresh."""
    env = os.environ
    path = str(config.settings_path())
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not config.stat_settled(max(st.st_mtime_ns, st.st_ctime_ns)):
        return None
    return (
        env.get("CLAUDE_MEM_REQUIRE_TOKEN"),
        env.get("CLAUDE_MEM_WORKER_HOST"),
        path,
        st.st_ino,
        st.st_mtime_ns,
        st.st_ctime_ns,
        st.st_size,
    )


def token_required() -> bool:
    """Read at request time, so settings.json changes apply without a restart.

    Memoised on the settings file's stamp and the two variables: a full settings load
    cost ~45 µs, twice per API request; a stat costs ~2."""
    global _required_memo
    key = _required_key()
    memo = _required_memo
    if key is not None and memo is not None and memo[0] == key:
        return memo[1]
    settings = config.load()
    required = config.require_token(settings) or not is_loopback(config.worker_host(settings))
    if key is not None:
        _required_memo = (key, required)
    return required


def bearer_token(request: HttpRequest) -> str:
    return bearer_value(request.headers.get("Authorization", ""))


def bearer_value(authorization: str) -> str:
    """The credential of an `Authorization: Bearer …` header, or ''."""
    scheme, _, value = authorization.partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def _unauthorized(reason: str) -> JsonResponse:
    response = JsonResponse({"error": reason}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="cmem"'
    return response


class ApiTokenMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: TokenRequest) -> HttpResponse:  # type: ignore[override]
        request.api_token = None
        required = token_required()
        # The owner check below asks the same question: one answer per request.
        request.cmem_token_required = required  # type: ignore[attr-defined]
        # A worker that needs tokens serves other machines: no path a request names is
        # read from this server's disk (memory.projects.remote_request).
        with request_remote_scope(required):
            return self._handle(request, required)

    def _handle(self, request: TokenRequest, required: bool) -> HttpResponse:
        if not required:
            return self.get_response(request)
        path = request.path_info
        if path.startswith("/api/"):
            if path.rstrip("/") in OPEN_API_PATHS:
                return self.get_response(request)
            raw = bearer_token(request)
            if not raw and request.method in SAFE_METHODS and request.user.is_staff:
                # A signed-in admin may browse /api/docs and read; writes always need a token
                # (a cookie alone would make them forgeable from another site).
                return self.get_response(request)
            if not raw:
                return _unauthorized(
                    "missing API token: send 'Authorization: Bearer <token>' (cmem token create USER)"
                )
            # Imported here: the tokens module touches models, and middleware loads early.
            from memory.team.tokens import token_verify

            token = token_verify(raw=raw)
            if token is None:
                return _unauthorized("invalid or revoked API token")
            request.api_token = token
            # Every service this request reaches reads and writes only what the token's
            # user may (memory/team/scope.py); staff read everything.
            from memory.team.scope import viewer_scope

            with viewer_scope(user_id=token.user_id, staff=token.user.is_staff):
                return self.get_response(request)
        if path.startswith(OPEN_PAGE_PREFIXES) or request.user.is_staff:
            return self.get_response(request)
        return redirect_to_login(request.get_full_path())
