"""`cmem migrate` on a data dir that does not exist yet, through the real console script."""

from __future__ import annotations

import sqlite3
import stat
import subprocess
from pathlib import Path

import pytest
from django.apps import apps

from tests.support import CMEM, free_port, make_worker_env

pytestmark = pytest.mark.slow


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("fresh") / "nested" / "cmem-data"  # not created yet
    env = make_worker_env(data, free_port())
    done = subprocess.run(
        [CMEM, "migrate", "--noinput"], env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    return data


def test_the_data_dir_and_database_are_user_only(migrated: Path) -> None:
    assert mode(migrated) == 0o700
    for name in ("cmem.sqlite3", "settings.json", "secret_key"):
        assert mode(migrated / name) == 0o600, name
    assert mode(migrated / "logs") == 0o700


def test_every_migration_is_applied_and_every_model_has_its_table(migrated: Path) -> None:
    db = sqlite3.connect(migrated / "cmem.sqlite3")
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    applied = {(app, name) for app, name in db.execute("SELECT app, name FROM django_migrations")}
    for app_label in ("memory", "deliverables"):
        for model in apps.get_app_config(app_label).get_models():
            assert model._meta.db_table in tables, model
        on_disk = {
            p.stem for p in (Path(apps.get_app_config(app_label).path) / "migrations").glob("0*.py")
        }
        assert on_disk and {(app_label, name) for name in on_disk} <= applied
    assert {"memory_observation_fts", "memory_summary_fts", "memory_prompt_fts"} <= tables


def test_the_database_runs_in_wal_mode(migrated: Path) -> None:
    db = sqlite3.connect(migrated / "cmem.sqlite3")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_migrating_again_changes_nothing(migrated: Path) -> None:
    env = make_worker_env(migrated, free_port())
    done = subprocess.run(
        [CMEM, "migrate", "--noinput"], env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    assert "No migrations to apply" in done.stdout
