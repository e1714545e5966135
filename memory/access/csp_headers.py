"""django-csp's middleware with the policy built once, not on every response.

django-csp rebuilds the header string from settings on each response (dataclass copies,
sorting, joining: about a sixth of a /api/health request in-process). cmem's policy is
static: no nonces, no per-view decorators. So the header a plain response gets is
computed on the first one and reused; a response or request that does carry per-view CSP
state (a decorator's `_csp_*` attribute, a used nonce) still goes through django-csp.
"""

from __future__ import annotations

from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject, CSPMiddleware
from django.conf import settings
from django.core.signals import setting_changed
from django.http import HttpRequest, HttpResponseBase

_PER_RESPONSE = (
    "_csp_exempt",
    "_csp_exempt_ro",
    "_csp_config",
    "_csp_config_ro",
    "_csp_update",
    "_csp_update_ro",
    "_csp_replace",
    "_csp_replace_ro",
)


class StaticCSPMiddleware(CSPMiddleware):
    _headers: tuple[str | None, str | None] | None = None

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        plain = (
            not settings.DEBUG
            and getattr(request, "_csp_nonce", None) is None
            and not any(hasattr(response, name) for name in _PER_RESPONSE)
            and HEADER not in response
            and HEADER_REPORT_ONLY not in response
        )
        if not plain:
            return super().process_response(request, response)
        if self._headers is None:
            response = super().process_response(request, response)
            type(self)._headers = (response.get(HEADER), response.get(HEADER_REPORT_ONLY))
            return response
        header, report_only = self._headers
        if header:
            response[HEADER] = header
        if report_only:
            response[HEADER_REPORT_ONLY] = report_only
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)  # type: ignore[attr-defined]
        return response


def _forget_policy(*, setting: str, **kwargs: object) -> None:
    # override_settings in tests (and nothing else) changes the policy at run time.
    if setting.startswith("CONTENT_SECURITY_POLICY") or setting == "DEBUG":
        StaticCSPMiddleware._headers = None


setting_changed.connect(_forget_policy)
