"""Error pages: JSON `{"detail": …}` under /api/ (clients parse it), styled pages elsewhere.

Django calls these (handler404/handler500 in cmem_site/urls.py) when DEBUG is off. The 500
page is a template of its own that needs no database and no context processor: whatever
broke the request may be what they would touch.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template import loader


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith("/api/")


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if _is_api(request):
        return JsonResponse({"detail": f"Not found: {request.path}"}, status=404)
    body = loader.render_to_string("404.html", {"path": request.path}, request=request)
    return HttpResponse(body, status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    if _is_api(request):
        return JsonResponse({"detail": "Internal server error; see `cmem logs`."}, status=500)
    return HttpResponse(loader.get_template("500.html").render(), status=500)
