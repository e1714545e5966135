"""Helpers tests import (never from a conftest): paths, the live worker, factories."""

from __future__ import annotations

from tests.support.paths import CLAUDE_FIXTURES, CMEM, CODEX_FIXTURES, FIXTURES, REPO
from tests.support.worker import (
    LiveWorker,
    free_port,
    make_worker_env,
    owner_headers,
    owner_open,
    stop_detached_worker,
    token_mode_worker,
)

__all__ = [
    "CLAUDE_FIXTURES",
    "CMEM",
    "CODEX_FIXTURES",
    "FIXTURES",
    "REPO",
    "LiveWorker",
    "free_port",
    "make_worker_env",
    "owner_headers",
    "owner_open",
    "stop_detached_worker",
    "token_mode_worker",
]
