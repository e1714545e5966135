"""The WSGI application the worker's server runs."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cmem_site.settings")
application = get_wsgi_application()

# The embedding model loads in the background (about a second), so the first search by
# meaning or prompt-time recall does not pay for it.
from memory.retrieval.embeddings.model import warm_in_background  # noqa: E402

warm_in_background()
