"""Team-mode helpers: PostgreSQL/Redis addresses, raw queries, running `cmem`, and the rule
that a missing server skips locally but fails in CI (CMEM_TEAM_REQUIRED=1)."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.support.paths import CMEM
from tests.support.worker import LiveWorker, free_port, make_worker_env

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


def services_or_fail() -> None:
    """Team mode's promises need its servers: without them a test fails, never skips."""
    import redis

    try:
        with pg_connect() as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # noqa: BLE001 - any failure means "not reachable"
        pytest.fail(f"PostgreSQL not reachable at {PG_ADMIN_URL} ({exc}); start it", pytrace=False)
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"Redis not reachable at {REDIS_URL} ({exc}); start it", pytrace=False)


@contextmanager
def live_team_worker(
    template: str, folder: Path, prefix: str, **extra: str
) -> Iterator[tuple[LiveWorker, dict[str, str]]]:
    """A real `cmem serve` in team mode that requires tokens: a database of its own made
    from `template`, a queue of its own on Redis, data under `folder`; both dropped after."""
    services_or_fail()
    name = f"cmem_{prefix}_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    with pg_connect() as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    queue = f"cmem-{prefix}-{uuid.uuid4().hex[:10]}"
    data = folder / "team-data"
    data.mkdir(mode=0o700)
    port = free_port()
    env = make_worker_env(
        data,
        port,
        CLAUDE_MEM_DATABASE_URL=f"{PG_ADMIN_URL}/{name}",
        CLAUDE_MEM_QUEUE_URL=REDIS_URL,
        CMEM_HUEY_NAME=queue,
        CLAUDE_MEM_COMPRESSOR="offline",
        CLAUDE_MEM_REQUIRE_TOKEN="true",
        **extra,
    )
    worker = LiveWorker(data_dir=data, port=port, env=env)
    worker.start(timeout=90)
    try:
        yield worker, env
    finally:
        worker.stop()
        import redis

        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(match=f"*{queue}*"))
        if keys:
            client.delete(*keys)
        with pg_connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
