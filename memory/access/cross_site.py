"""Refuse writes that a browser sends on behalf of another site.

The worker listens on loopback, so any web page the user opens can make the browser POST to
it: a `text/plain` form post needs no CORS preflight, and the JSON API (django-ninja) does
not use Django's CSRF tokens. Without this guard a page could inject memories through
`/api/hooks/…` or delete them through `/api/forget`. Pages already carry CSRF tokens;
reads are safe (the browser keeps the answer from the other site, and a foreign Host header
is refused by ALLOWED_HOSTS, which stops DNS rebinding).

A write is refused (403) when the browser says it is cross-origin: `Sec-Fetch-Site` other
than `same-origin`/`none`, or an `Origin` that is not this server's. The hook client, the
MCP server, curl and team-mode clients send neither header, so they are unaffected.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
ALLOWED_FETCH_SITES = frozenset({"same-origin", "none"})


def cross_site_reason(request: HttpRequest) -> str:
    """'' when the request may write; else why it is refused."""
    if request.method in SAFE_METHODS:
        return ""
    site = request.headers.get("Sec-Fetch-Site", "").strip().lower()
    if site and site not in ALLOWED_FETCH_SITES:
        return f"cross-site request refused (Sec-Fetch-Site: {site})"
    origin = request.headers.get("Origin")
    if origin is None:
        return ""
    # Hosts are compared, not schemes: behind a TLS-terminating proxy (team mode) the browser
    # says https while the worker sees http.
    own = request.get_host().lower()
    scheme, sep, rest = origin.strip().lower().partition("://")
    if not sep or rest.split("/", 1)[0] != own:
        return f"cross-site request refused (Origin {origin[:100]!r} is not {own})"
    return ""


class CrossSiteWriteGuard:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        reason = cross_site_reason(request)
        if reason:
            return JsonResponse({"error": reason}, status=403)
        return self.get_response(request)
