"""The hot routes, answered beneath Django's handler (issue 19).

Every hook and every search pays for Django's request cycle before its service runs: the
WSGIRequest, nine middleware of the API lane (memory/api/lane.py), the URL resolver, ninja's
parameter parsing and the HttpResponse, about 0.5 ms of a 1 ms call on this machine. The
hot lane is a WSGI wrapper around the Django app that answers a handful of routes itself,
calling the same body builders as their ninja handlers, and hands every other request to
Django untouched.

It answers only what it is sure of, and declines (passes the request on) otherwise, so
Django gives every refusal and every error its canonical answer:
- local mode only: a worker that needs team tokens declines everything;
- the owner only, proven by the Unix socket's mark or the Bearer secret (`/api/health`,
  which is open, also serves callers without a credential); a cookie, a wrong Bearer or a
  foreign Host header goes to Django, which decides;
- writes only without `Origin`/`Sec-Fetch-Site` (what a browser sends; the hook client
  sends neither), so the cross-site guard keeps deciding for browsers;
- a query string it parses exactly as the handler's parameters would be, or Django's.

The security headers on its answers are the ones Django's chain put on a probe answer
(GET /api/health on the owner's mark, sent through the Django app once), so a header a
middleware adds later is on these answers too. A middleware that may refuse requests is
a different matter: the lane serves only while `settings.MIDDLEWARE` is the list it was
written against (`WRITTEN_FOR`), and otherwise steps aside, logging why.

Around every answer the database connections are checked as Django's request signals
would check them: while the signals' receivers are Django's own (`DJANGO_RECEIVERS`), the
lane calls `close_old_connections` itself (sending the two signals cost ~35 µs of a 120 µs
answer, mostly receivers with nothing to do here); a receiver anything else connected makes
the lane send the signals. `CMEM_HOT_LANE=0` serves without the lane
(memory/service/server.py `served_apps`).
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from django.conf import settings
from django.core import signals
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from pydantic import ValidationError

from memory.api import JSON_CONTENT_TYPE, json_bytes
from memory.api.core import health_body, hook_answer
from memory.api.insights import by_file_body
from memory.api.retrieval import (
    SearchFilters,
    observations_body,
    parse_ids,
    search_body,
    search_kinds,
)
from memory.owner_auth import bearer_matches
from memory.projects import request_remote_scope
from memory.service.credentials import OWNER_SOCKET_ENVIRON
from memory.service.foreground import foreground
from memory.team.auth import bearer_value, token_required

log = logging.getLogger(__name__)

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
# The middleware the lane was checked against: each either adds headers (probed), or is one
# whose decision the lane makes itself (host, cross-site, token, owner), or does nothing on
# an API call (static files, sessions without a cookie, csrf, messages).
WRITTEN_FOR = (
    "memory.api.lane.ApiLane",
    "django.middleware.security.SecurityMiddleware",
    "memory.cross_site.CrossSiteWriteGuard",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "memory.team.auth.ApiTokenMiddleware",
    "memory.owner_auth.OwnerOnlyMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "memory.csp_headers.StaticCSPMiddleware",
)
STATUS_LINES = {
    200: "200 OK",
    400: "400 Bad Request",
    413: "413 Request Entity Too Large",
    500: "500 Internal Server Error",
    503: "503 Service Unavailable",
}
# Django's receivers of request_started and request_finished, and why a lane answer needs
# only the connections' check: queries are logged only with DEBUG, no URL was resolved, and
# local mode's cache (LocMemCache) holds no connection to close.
DJANGO_RECEIVERS = frozenset(
    {
        "django.db.close_old_connections",
        "django.db.reset_queries",
        "django.core.cache.close_caches",
        "django.core.handlers.base.reset_urlconf",
    }
)
# Headers the probe answer carries that belong to that answer, not to every answer.
_PER_ANSWER = frozenset({"content-type", "content-length"})
_HOOK_PATH = re.compile(r"/api/hooks/([^/]+)/([^/]+)")


@dataclass(frozen=True)
class HotRequest:
    environ: dict[str, Any]
    owner: bool
    params: dict[str, str]


# A route answers (status, body), or None to decline: Django then answers the request.
Answer = tuple[int, bytes] | None


def _health(request: HotRequest) -> Answer:
    return (200, health_body(owner=request.owner)) if not request.params else None


def _observations(request: HotRequest) -> Answer:
    if not request.owner or request.params.keys() != {"ids"}:
        return None
    try:
        wanted = parse_ids(request.params["ids"])
    except ValueError:
        return None
    return 200, json_bytes(observations_body(wanted))


def _search(request: HotRequest) -> Answer:
    if not request.owner or not request.params.keys() <= SearchFilters.model_fields.keys():
        return None
    try:
        filters = SearchFilters.model_validate(request.params)
        kinds = search_kinds(filters.kind)
    except (ValidationError, ValueError):
        return None
    return 200, json_bytes(search_body(filters, kinds))


def _by_file(request: HotRequest) -> Answer:
    params = request.params
    if not request.owner or not {"path", "project"} <= params.keys() <= {
        "path",
        "project",
        "limit",
    }:
        return None
    limit = params.get("limit", "15")
    path = params["path"]
    if not (limit.isascii() and limit.isdigit() and 1 <= int(limit) <= 200):
        return None
    if not path.strip() or "\0" in path:
        return None
    body = by_file_body(path=path, project=params["project"], limit=int(limit))
    return 200, json_bytes(body)


def _hook(request: HotRequest) -> Answer:
    environ = request.environ
    match = _HOOK_PATH.fullmatch(environ.get("PATH_INFO", ""))
    length = environ.get("CONTENT_LENGTH") or ""
    if (
        match is None
        or not request.owner
        or request.params
        or not (length.isascii() and length.isdigit())
        or "HTTP_TRANSFER_ENCODING" in environ
        # A browser's write: the cross-site guard (memory/cross_site.py) decides.
        or "HTTP_ORIGIN" in environ
        or "HTTP_SEC_FETCH_SITE" in environ
    ):
        return None
    size = int(length)
    stream = environ["wsgi.input"]
    status, body = hook_answer(
        platform=match[1], event=match[2], size=size, read_body=lambda: stream.read(size)
    )
    return status, json_bytes(body)


GET_ROUTES: dict[str, Callable[[HotRequest], Answer]] = {
    "/api/health": _health,
    "/api/observations": _observations,
    "/api/search": _search,
    "/api/observations/by-file": _by_file,
}


def _params(query: str) -> dict[str, str] | None:
    """The query string as the handler's parameters would see it (Django's QueryDict:
    UTF-8, blank values kept), or None when it is anything the lane would have to guess
    about: not ASCII on the wire, or a name given twice."""
    if not query:
        return {}
    if not query.isascii():
        return None
    pairs = parse_qsl(query, keep_blank_values=True, encoding="utf-8", errors="replace")
    params = dict(pairs)
    return params if len(params) == len(pairs) else None


class HotLane:
    """WSGI: `app` with the hot routes answered here (see the module's docstring)."""

    def __init__(self, app: WsgiApp) -> None:
        self.app = app
        self.enabled = True
        if tuple(settings.MIDDLEWARE) != WRITTEN_FOR:
            log.warning(
                "hot lane off: settings.MIDDLEWARE is not the list it was written for "
                "(memory/api/hot_lane.py WRITTEN_FOR); every request goes through Django"
            )
            self.enabled = False
        # Settings under which those middleware would redirect instead of answering.
        if self.enabled and (settings.SECURE_SSL_REDIRECT or settings.PREPEND_WWW):
            log.warning("hot lane off: SECURE_SSL_REDIRECT or PREPEND_WWW is set")
            self.enabled = False
        self._headers: list[tuple[str, str]] | None = None
        self._send_signals = not _only_django_receivers()
        self._allowed_hosts = list(settings.ALLOWED_HOSTS)
        if settings.USE_X_FORWARDED_HOST:  # a forwarded host: Django's get_host decides
            self._allowed_hosts = []

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if self.enabled:
            route = self._route(environ)
            if route is not None:
                answer = self._serve(route, environ)
                if answer is not None:
                    status, body = answer
                    start_response(
                        STATUS_LINES[status],
                        [
                            ("Content-Type", JSON_CONTENT_TYPE),
                            ("Content-Length", str(len(body))),
                            *self.headers(),
                        ],
                    )
                    return [body]
        return self.app(environ, start_response)

    def _route(self, environ: dict[str, Any]) -> Callable[[HotRequest], Answer] | None:
        method = environ.get("REQUEST_METHOD")
        path = environ.get("PATH_INFO", "")
        if environ.get("SCRIPT_NAME"):
            return None
        if method == "GET":
            return GET_ROUTES.get(path)
        if method == "POST" and path.startswith("/api/hooks/"):
            return _hook
        return None

    def _serve(self, route: Callable[[HotRequest], Answer], environ: dict[str, Any]) -> Answer:
        params = _params(environ.get("QUERY_STRING", ""))
        if params is None or not _host_allowed(environ, self._allowed_hosts) or token_required():
            return None
        if environ.get(OWNER_SOCKET_ENVIRON) is True:
            owner = True
        else:
            offered = bearer_value(environ.get("HTTP_AUTHORIZATION", ""))
            if offered:
                if not bearer_matches(offered):
                    return None  # Django answers a wrong credential
                owner = True
            elif environ.get("HTTP_COOKIE"):
                return None  # perhaps the owner's browser session: Django reads it
            else:
                owner = False
        if self._send_signals:
            signals.request_started.send(sender=HotLane, environ=environ)
        else:
            close_old_connections()
        try:
            # Local mode: paths name this machine's files; the consumer's work waits for it.
            with request_remote_scope(False), foreground():
                return route(HotRequest(environ=environ, owner=owner, params=params))
        except Exception:
            if environ.get("REQUEST_METHOD") == "GET":
                # A read: Django runs it again and answers the failure its own way (a 400 for
                # a value the database refuses, a logged 500 otherwise).
                log.debug(
                    "hot lane: GET %s failed; Django answers it",
                    environ.get("PATH_INFO"),
                    exc_info=True,
                )
                return None
            log.exception(
                "hot lane: %s %s failed", environ.get("REQUEST_METHOD"), environ.get("PATH_INFO")
            )
            return 500, json_bytes(
                {"error": "internal server error (the worker's log has the traceback)"}
            )
        finally:
            if self._send_signals:
                signals.request_finished.send(sender=HotLane)
            else:
                close_old_connections()

    def headers(self) -> list[tuple[str, str]]:
        """The headers Django's chain puts on an API answer, from one probe through it."""
        if self._headers is None:
            probe: dict[str, Any] = {}

            def keep(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
                probe["status"], probe["headers"] = status, headers

            environ = {
                "REQUEST_METHOD": "GET", "PATH_INFO": "/api/health", "QUERY_STRING": "",
                "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80", "HTTP_HOST": "127.0.0.1",
                "REMOTE_ADDR": "127.0.0.1", "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(),
                "wsgi.errors": io.StringIO(), OWNER_SOCKET_ENVIRON: True,
            }  # fmt: skip
            result = self.app(environ, keep)
            close = getattr(result, "close", None)
            if close is not None:
                close()
            if not str(probe.get("status", "")).startswith("200"):
                raise RuntimeError(f"hot lane: the header probe answered {probe.get('status')}")
            self._headers = [
                (name, value) for name, value in probe["headers"] if name.lower() not in _PER_ANSWER
            ]
        return self._headers


def _host_allowed(environ: dict[str, Any], allowed_hosts: list[str]) -> bool:
    """Django's Host check (ALLOWED_HOSTS: no DNS rebinding), on the Host header only: a
    request without one goes to Django."""
    host = environ.get("HTTP_HOST")
    if not host:
        return False
    domain, _port = split_domain_port(host)
    return bool(domain) and validate_host(domain, allowed_hosts)


def _only_django_receivers() -> bool:
    """Whether the request signals' receivers are all in DJANGO_RECEIVERS."""
    try:
        for signal in (signals.request_started, signals.request_finished):
            sync, asynchronous = signal._live_receivers(HotLane)
            names = {f"{r.__module__}.{r.__qualname__}" for r in sync}
            if asynchronous or not names <= DJANGO_RECEIVERS:
                return False
    except (AttributeError, TypeError, ValueError):  # a dispatcher unlike 5.2-6.1: signals
        return False
    return True
