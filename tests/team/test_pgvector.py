"""The pgvector path of team mode, on a PostgreSQL that has pgvector: `pgserver` (a wheel
bundling PostgreSQL 16 with pgvector 0.6, in the dev extra), started here.

This machine's Debian PostgreSQL has no pgvector, so the rest of tests/team covers the
fallback; here `cmem migrate` must find the extension and take the pgvector path, and
search, filters, and deletes must hold on it. When pgserver cannot start, the tests skip
locally and fail under CMEM_TEAM_REQUIRED=1 (CI), like every team-mode prerequisite.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.team import run_cmem, unavailable

pytestmark = [pytest.mark.team]

SCRIPT = Path(__file__).parent / "scripts" / "pgvector_recall.py"


@pytest.fixture(scope="session")
def pgvector_server() -> Iterator[tuple[Any, str]]:
    """(server, socket dir) of a pgserver PostgreSQL with pgvector, for this session."""
    # Under /tmp, world-traversable: as root pgserver runs postgres as a user it creates,
    # which must reach the data folder (pytest's own tmp dirs are 0700).
    folder = tempfile.mkdtemp(prefix="cmem-pgserver-")
    os.chmod(folder, 0o755)
    try:
        import pgserver

        server = pgserver.get_server(folder, cleanup_mode="stop")
        server.psql("SELECT 1;")
    except Exception as exc:  # noqa: BLE001 - any failure to start is "unavailable"
        shutil.rmtree(folder, ignore_errors=True)
        unavailable(f"pgserver could not start PostgreSQL with pgvector ({exc})")
    try:
        yield server, str(server.get_uri()).split("host=", 1)[1]
    finally:
        server.cleanup()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def pgvector_env(pgvector_server: tuple[Any, str], tmp_path: Path) -> Iterator[dict[str, str]]:
    server, socket = pgvector_server
    name = f"cmem_vec_{uuid.uuid4().hex[:8]}"
    server.psql(f'CREATE DATABASE "{name}";')
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CLAUDE_MEM_", "ANTHROPIC_", "CMEM_"))
    }
    env.update(
        CLAUDE_MEM_DATA_DIR=str(data),
        CLAUDE_MEM_COMPRESSOR="offline",
        CLAUDE_MEM_DATABASE_URL=f"postgresql://postgres@/{name}?host={socket}",
    )
    migrated = run_cmem(["migrate", "--noinput"], env, timeout=300)
    assert migrated.returncode == 0, migrated.stderr
    try:
        yield env
    finally:
        server.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE);')


def _shell(env: dict[str, str], code: str) -> str:
    result = run_cmem(["manage", "shell", "-c", code], env, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def test_migrate_installs_pgvector_where_the_server_has_it(pgvector_env: dict[str, str]) -> None:
    line = _shell(
        pgvector_env,
        "import json; from django.db import connection; c = connection.cursor(); "
        "c.execute(\"SELECT extversion FROM pg_extension WHERE extname = 'vector'\"); v = c.fetchone(); "
        "c.execute(\"SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memory_embedding' AND indexdef LIKE '%%hnsw%%' ORDER BY 1\"); "
        "print(json.dumps({'vector': v and v[0], 'indexes': c.fetchall()}))",
    )
    found = json.loads(line)
    assert found["vector"], "the vector extension was not created"
    names = [name for name, _ in found["indexes"]]
    assert names == [
        "embedding_observation_hnsw",
        "embedding_prompt_hnsw",
        "embedding_summary_hnsw",
    ]
    assert all("vector_cosine_ops" in definition for _, definition in found["indexes"])


def test_search_filters_and_deletes_on_pgvector(pgvector_env: dict[str, str]) -> None:
    out = json.loads(_shell(pgvector_env, SCRIPT.read_text()))
    ids = out["ids"]
    assert out["vendor"] == "postgresql" and out["ready"] is True
    assert out["column_type"] == "vector(384)"
    # Every vector went to the pgvector column as well as to the blob.
    assert out["rows"] == out["column_filled"] == len(ids)
    # Searches took the pgvector path: no blob matrix was loaded for the fallback scan.
    assert out["fallback_matrices"] == 0
    # The unscoped query walks the kind's HNSW index.
    assert "embedding_observation_hnsw" in out["plan"], out["plan"]
    # Each mode: meaning finds the paraphrase the words cannot.
    assert ids["refunds"] not in out["keyword"]
    assert set(out["semantic"][:2]) == {ids["refunds"], ids["refund_infra"]}
    assert set(out["hybrid"][:2]) == {ids["refunds"], ids["refund_infra"]}
    assert out["hybrid_words"][0] == ids["webhooks"]
    # Filters hold on the pgvector path: project, type, dates.
    assert out["semantic_shop"][0] == ids["refunds"]
    assert ids["refund_infra"] not in out["semantic_shop"]
    assert set(out["semantic_infra"]) <= {ids["redis"], ids["refund_infra"]}
    assert out["semantic_infra"][0] == ids["refund_infra"]
    assert out["hybrid_infra"][0] == ids["refund_infra"]
    assert ids["refunds"] not in out["hybrid_infra"]
    assert set(out["semantic_feature"]) <= {ids["webhooks"]}
    assert ids["old"] not in out["semantic_recent"] and out["semantic_recent"]
    # Vectors follow their rows: forget (webhooks), prune (old), a session's cascade (infra).
    assert out["left"] == [ids["refunds"]]
    assert out["embedding_rows"] == 1
    assert out["semantic_after"] == [ids["refunds"]]
    assert ids["webhooks"] not in out["hybrid_after"]


def test_a_column_of_the_earlier_width_is_made_again_at_384(pgvector_env: dict[str, str]) -> None:
    """Migration 0014: a database migrated when the model was 256 wide gets the column and
    its HNSW indexes again at the bundled model's width; its blobs stay for the sweep."""
    line = _shell(
        pgvector_env,
        "import json; from django.db import connection; "
        "from memory.retrieval.embeddings import pgvector; c = connection.cursor(); "
        "c.execute('DROP INDEX embedding_observation_hnsw'); "
        "c.execute('ALTER TABLE memory_embedding DROP COLUMN embedding'); "
        "c.execute('ALTER TABLE memory_embedding ADD COLUMN embedding vector(256)'); "
        "pgvector.resize(connection); pgvector.resize(connection); "
        "c.execute(\"SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'memory_embedding'::regclass AND attname = 'embedding' AND NOT attisdropped\"); t = c.fetchone()[0]; "
        "c.execute(\"SELECT count(*) FROM pg_indexes WHERE tablename = 'memory_embedding' AND indexdef LIKE '%%hnsw%%'\"); "
        "print(json.dumps({'type': t, 'indexes': c.fetchone()[0]}))",
    )
    assert json.loads(line) == {"type": "vector(384)", "indexes": 3}


def test_an_owner_scope_walks_the_index_and_a_selective_one_is_ranked_exactly(
    pgvector_env: dict[str, str],
) -> None:
    """Issue 33: a teammate's share of the rows is answered by the HNSW walk, filtered to
    their rows, with the exact answer's rows; a newcomer's two rows are under half of 5
    asked, and the exact scan of their rows finds both (half of 4: the walk answers). No
    one sees another's."""
    out = json.loads(_shell(pgvector_env, (SCRIPT.parent / "pgvector_scoped.py").read_text()))
    users = out["user_ids"]
    assert out["ready"] is True
    teammate, newcomer, newcomer_half = out["teammate-10"], out["newcomer-5"], out["newcomer-4"]
    assert teammate["walked"] and not teammate["scanned"]
    assert teammate["owners"] == [users["teammate"]]
    assert len(teammate["found"]) == 10 and teammate["found"] == teammate["exact"]
    assert teammate["scores"] == pytest.approx(teammate["cosines"], abs=1e-3)
    assert newcomer["walked"] and newcomer["scanned"]
    assert newcomer["owners"] == [users["newcomer"]]
    assert newcomer["found"] == newcomer["exact"] and len(newcomer["found"]) == 2
    # Asked for 4, the widest walk's 2 are half: they answer, without the exact scan.
    assert newcomer_half["walked"] and not newcomer_half["scanned"]
    assert newcomer_half["found"] == newcomer["exact"]
