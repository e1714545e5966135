"""The API's fast lane: `/api/` requests run a shorter middleware chain.

`ApiLane` is the first middleware of `settings.MIDDLEWARE`. A request whose path starts
with `/api/` leaves the full chain there and goes through a second chain built from the
same list minus `API_SKIPPED`, then the URL resolver and the ninja view; every other path
(pages, admin, static) continues down the full chain unchanged.

The lane is the full list minus a named few, not a list of its own, so a security
middleware added to `MIDDLEWARE` later runs on the API too without anyone remembering it.
What stays on every API request: the security headers, the cross-site write guard, the
Host check (CommonMiddleware's `get_host`, ALLOWED_HOSTS against DNS rebinding) and
Content-Length, the owner's session (a browser page calling the API proves the owner by
its cookie), the team token check and its per-user scope (memory/team/auth.py), the
owner check (memory/access/owner_auth.py) and the Content-Security-Policy header.

Because it is a middleware (not a WSGI wrapper), Django's test client goes through the
lane exactly as the server does, so every API test exercises it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, MiddlewareNotUsed
from django.core.handlers.base import BaseHandler
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpRequest, HttpResponse
from django.urls import ResolverMatch, get_resolver
from django.utils.module_loading import import_string

API_PREFIX = "/api/"
LANE = "memory.api.short_chain.ApiLane"
# Resolved API paths kept (a path names its view and arguments, so the match can be reused);
# emptied when full, since paths carrying ids are many and each is asked rarely.
RESOLVED_PATHS_MAX = 256

# Measured per /api/health request in-process (10k database): whitenoise 41 µs, csrf 50 µs,
# messages 66 µs, together over a third of the middleware chain.
API_SKIPPED = frozenset(
    {
        # Serves STATIC_URL (/static/) only; no /api/ path is a static file.
        "whitenoise.middleware.WhiteNoiseMiddleware",
        # Every ninja view is csrf_exempt (ninja/operation.py wraps each view so), so this
        # middleware never refuses an API call; the API's defence against forged browser
        # writes is memory.access.cross_site.CrossSiteWriteGuard, which stays in the lane.
        "django.middleware.csrf.CsrfViewMiddleware",
        # Flash messages are shown by pages; no API view adds or reads one.
        "django.contrib.messages.middleware.MessageMiddleware",
    }
)


def lane_middleware(full: list[str]) -> list[str]:
    """The API chain: the full chain in its order, minus the lane itself and API_SKIPPED."""
    return [path for path in full if path != LANE and path not in API_SKIPPED]


class _LaneHandler(BaseHandler):
    """A handler whose chain is `lane_middleware(settings.MIDDLEWARE)` (sync only: every
    middleware cmem uses is sync, and the server calls WSGI, a sync interface).

    Django's own load_middleware reads `settings.MIDDLEWARE` and nothing else, so this is
    its sync path with the list as a parameter."""

    def load_lane(self, paths: list[str]) -> Callable[[HttpRequest], Any]:
        self._resolved: dict[str, ResolverMatch] = {}
        views: list[Callable[..., Any]] = []
        templates: list[Callable[..., Any]] = []
        exceptions: list[Callable[..., Any]] = []
        self._view_middleware = views
        self._template_response_middleware = templates
        self._exception_middleware = exceptions
        handler = convert_exception_to_response(self._get_response)  # type: ignore[attr-defined]
        for path in reversed(paths):
            middleware = import_string(path)
            if not getattr(middleware, "sync_capable", True):
                raise ImproperlyConfigured(f"{path} is async-only; the API lane is sync")
            try:
                instance = middleware(handler)
            except MiddlewareNotUsed:
                continue
            if instance is None:
                raise ImproperlyConfigured(f"Middleware factory {path} returned None.")
            if hasattr(instance, "process_view"):
                views.insert(0, instance.process_view)
            if hasattr(instance, "process_template_response"):
                templates.append(instance.process_template_response)
            if hasattr(instance, "process_exception"):
                exceptions.append(instance.process_exception)
            handler = convert_exception_to_response(instance)
        self._middleware_chain = handler
        return handler

    def resolve_request(self, request: HttpRequest) -> ResolverMatch:
        """Django's resolve, remembered per path: walking the URL patterns to ninja's routes
        cost ~40 µs of a ~200 µs /api/health. A request with its own urlconf, and
        a path that does not resolve (404), take Django's way every time."""
        if hasattr(request, "urlconf"):
            return super().resolve_request(request)  # type: ignore[no-any-return]
        path = request.path_info
        match = self._resolved.get(path)
        if match is None:
            match = get_resolver().resolve(path)
            if len(self._resolved) >= RESOLVED_PATHS_MAX:
                self._resolved.clear()
            self._resolved[path] = match
        request.resolver_match = match
        return match


class ApiLane:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.api_chain = _LaneHandler().load_lane(lane_middleware(list(settings.MIDDLEWARE)))

    def __call__(self, request: HttpRequest) -> Any:
        if request.path_info.startswith(API_PREFIX):
            return self.api_chain(request)
        return self.get_response(request)
