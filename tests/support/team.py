"""Team-mode helpers: PostgreSQL/Redis addresses, raw queries, running `cmem`, and the rule
that a missing server skips locally but fails in CI (CMEM_TEAM_REQUIRED=1)."""

from __future__ import annotations

import os
import subprocess
from typing import Any, NoReturn

import pytest

from tests.support.paths import CMEM

PG_ADMIN_URL = os.environ.get("CMEM_TEAM_PG_URL", "postgres://postgres@127.0.0.1:5432")
REDIS_URL = os.environ.get("CMEM_TEAM_REDIS_URL", "redis://127.0.0.1:6379/0")
# What `cmem migrate` printed when it built the template (test_team_worker checks it).
MIGRATE_OUTPUT: dict[str, str] = {}


def team_required() -> bool:
    """CI exports CMEM_TEAM_REQUIRED=1: team mode must run there, never skip."""
    return os.environ.get("CMEM_TEAM_REQUIRED", "").strip().lower() in {"1", "true", "yes"}


def unavailable(reason: str) -> NoReturn:
    """A team-mode prerequisite is missing: skip locally, fail when team mode is required."""
    if team_required():
        pytest.fail(f"CMEM_TEAM_REQUIRED=1 and {reason}", pytrace=False)
    pytest.skip(reason)


def pg_connect(dbname: str = "postgres", **kwargs: Any):  # type: ignore[no-untyped-def]
    import psycopg

    return psycopg.connect(f"{PG_ADMIN_URL}/{dbname}", connect_timeout=3, autocommit=True, **kwargs)


def pg_query(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url, connect_timeout=3, autocommit=True) as conn:
        return conn.execute(sql, params).fetchall()


def run_cmem(
    args: list[str], env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CMEM, *args], env=env, capture_output=True, text=True, timeout=timeout)
