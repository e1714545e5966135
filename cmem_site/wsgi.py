"""The WSGI application the worker's server runs (memory/worker/server.py serves
`django_application` itself, marking Unix-socket requests by listener; `application` is
for running the app under gunicorn by hand).

The embedding model is not loaded here: it loads on first use (a search by meaning, recall,
or the consumer embedding new rows), so an idle worker never holds its 32 MB table."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterable
from typing import Any

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cmem_site.settings")
django_application = get_wsgi_application()

# memory.runtime.credentials.OWNER_SOCKET_ENVIRON; spelled here so this module stays import-light.
OWNER_SOCKET_ENVIRON = "cmem.owner_socket"


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """Mark requests that came in on the Unix socket: only the owner can connect there.

    The mark comes from the accepted socket's address family (gunicorn puts the client socket
    in `gunicorn.socket`), never from anything the client sends, and is cleared first so no
    other server or middleware can smuggle it in.
    """
    environ.pop(OWNER_SOCKET_ENVIRON, None)
    sock = environ.get("gunicorn.socket")
    if sock is not None and getattr(sock, "family", None) == socket.AF_UNIX:
        environ[OWNER_SOCKET_ENVIRON] = True
    return django_application(environ, start_response)
