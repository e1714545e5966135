"""Team mode fixtures: real PostgreSQL and Redis on 127.0.0.1.

Tests that use the Django test database on PostgreSQL (`pg_backend`) run when the suite is
pointed there with CMEM_TEST_DATABASE_URL (`make test` does, in its second run). Tests of
real processes (workers, consumers, `cmem migrate`) get a fresh database of their own,
cloned from a migrated template, so they never touch the test database or each other.
When a service is not reachable the tests skip and say which one and how to start it;
under CMEM_TEAM_REQUIRED=1 (CI sets it) they fail instead, so team mode can never pass by
not running.
"""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import LiveWorker, free_port, make_worker_env
from tests.support.team import (
    MIGRATE_OUTPUT,
    PG_ADMIN_URL,
    REDIS_URL,
    pg_connect,
    run_cmem,
    unavailable,
)

_counter = itertools.count()


@pytest.fixture(scope="session")
def pg_server() -> str:
    try:
        with pg_connect() as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # noqa: BLE001 - any failure means "not reachable" here
        unavailable(
            f"PostgreSQL not reachable at {PG_ADMIN_URL} ({exc}); start it (pg_ctlcluster … start) or set CMEM_TEAM_PG_URL"
        )
    return PG_ADMIN_URL


@pytest.fixture(scope="session")
def redis_url() -> str:
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except Exception as exc:  # noqa: BLE001
        unavailable(
            f"Redis not reachable at {REDIS_URL} ({exc}); start redis-server or set CMEM_TEAM_REDIS_URL"
        )
    return REDIS_URL


@pytest.fixture
def pg_backend(db: None) -> None:
    """The Django test database is PostgreSQL (CMEM_TEST_DATABASE_URL), else skip (fail in CI)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        unavailable(
            "runs on PostgreSQL: CMEM_TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/cmem (make test does)"
        )


def _cmem_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CLAUDE_MEM_", "ANTHROPIC_", "CMEM_"))
    }
    env.update(CLAUDE_MEM_DATA_DIR=str(data_dir), CLAUDE_MEM_COMPRESSOR="offline", **extra)
    return env


@pytest.fixture(scope="session")
def pg_template(pg_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A database migrated once by `cmem migrate`; fresh databases are cheap clones of it."""
    name = f"cmem_tpl_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    with pg_connect() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    data = tmp_path_factory.mktemp("tpl-data")
    env = _cmem_env(data, CLAUDE_MEM_DATABASE_URL=f"{pg_server}/{name}")
    result = run_cmem(["migrate", "--noinput"], env)
    assert result.returncode == 0, result.stderr
    MIGRATE_OUTPUT[name] = result.stdout
    try:
        yield name
    finally:
        with pg_connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def fresh_pg(pg_server: str, pg_template: str) -> Iterator[str]:
    """The URL of a new migrated database for this test alone (dropped after it)."""
    name = f"cmem_t_{os.getpid()}_{next(_counter)}_{uuid.uuid4().hex[:6]}"
    with pg_connect() as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{pg_template}"')
    try:
        yield f"{pg_server}/{name}"
    finally:
        with pg_connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def queue_name(redis_url: str) -> Iterator[str]:
    """A Huey queue of this test's own on the shared Redis (emptied after it)."""
    import redis

    name = f"cmem-team-{uuid.uuid4().hex[:10]}"
    yield name
    client = redis.Redis.from_url(redis_url)
    keys = list(client.scan_iter(match=f"*{name}*"))
    if keys:
        client.delete(*keys)


@pytest.fixture
def team_env(tmp_path: Path, fresh_pg: str, redis_url: str, queue_name: str) -> dict[str, str]:
    """Environment of a cmem process in team mode: its own database and queue."""
    data = tmp_path / "team-data"
    data.mkdir(mode=0o700, exist_ok=True)
    return _cmem_env(
        data,
        CLAUDE_MEM_DATABASE_URL=fresh_pg,
        CLAUDE_MEM_QUEUE_URL=redis_url,
        CMEM_HUEY_NAME=queue_name,
    )


@pytest.fixture
def team_worker(tmp_path: Path, team_env: dict[str, str]) -> Iterator[LiveWorker]:
    """A real `cmem serve` on PostgreSQL + Redis that requires API tokens."""
    data = Path(team_env["CLAUDE_MEM_DATA_DIR"])
    port = free_port()
    env = make_worker_env(data, port)
    env.update({k: v for k, v in team_env.items() if k.startswith(("CLAUDE_MEM_", "CMEM_"))})
    env.update(CLAUDE_MEM_WORKER_PORT=str(port), CLAUDE_MEM_REQUIRE_TOKEN="true")
    worker = LiveWorker(data_dir=data, port=port, env=env)
    worker.start(timeout=60)
    try:
        yield worker
    finally:
        worker.stop()
