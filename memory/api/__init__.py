"""The HTTP API: its routers (core, insights, retrieval) and the short middleware chain for `/api/`."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse
from ninja.responses import NinjaJSONEncoder

JSON_CONTENT_TYPE = "application/json; charset=utf-8"


def json_bytes(body: Any) -> bytes:
    """`body` as ninja renders it (its encoder: datetimes as `…:52.651Z`)."""
    return json.dumps(body, cls=NinjaJSONEncoder).encode()


def json_answer(body: Any) -> HttpResponse:
    """`body` as ninja would render it (its encoder: datetimes as `…:52.651Z`), for the hot
    handlers that build the body themselves instead of having ninja validate it against
    the response schema on every request; each one's test pins the body to the
    schema-validated one."""
    return HttpResponse(json_bytes(body), content_type=JSON_CONTENT_TYPE)
