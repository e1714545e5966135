"""Broken state on disk: a corrupt settings file, corrupt spool files, a database whose
migrations stopped part-way. Each gets a clear message; nothing else breaks."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.reliability.helpers import Session, hook, new_worker, rows, scalar, spooled, wait_for
from tests.support import CMEM

pytestmark = pytest.mark.slow


def _cmem(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CMEM, *args], env=env, capture_output=True, text=True, timeout=120)


CORRUPT_SETTINGS = {
    "truncated": (b'{"CLAUDE_MEM_READ_GATE": "deny", "CLAUDE_MEM_BATCH', "settings.json"),
    "binary": (b"\x00\xff\xfe garbage \x80", "settings.json"),
    "array": (b'["not", "an", "object"]', "settings.json"),
    "wrong types": (
        b'{"CLAUDE_MEM_BATCH_SIZE": "lots", "CLAUDE_MEM_FIELD_CAP": {"x": 1}}',
        "CLAUDE_MEM_",
    ),
}


def test_a_corrupt_settings_file_is_named_by_doctor_and_capture_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.worker.doctor import _settings_checks

    worker = new_worker(tmp_path, CLAUDE_MEM_COMPRESSOR="offline")
    settings_file = worker.data_dir / "settings.json"
    settings_file.write_bytes(CORRUPT_SETTINGS["truncated"][0])
    worker.start()  # the worker starts on defaults
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(worker.data_dir))
    try:
        session = Session(tmp_path, session_id="corrupt-settings")
        for n, (name, (content, says)) in enumerate(CORRUPT_SETTINGS.items()):
            settings_file.write_bytes(content)
            result, _ = hook(worker.env, "session-init", session.prompt(f"still captured {n}"))
            assert result.returncode == 0 and result.stderr == b"", (name, result.stderr)
            result, _ = hook(worker.env, "observation", session.bash(n))
            assert result.returncode == 0 and result.stderr == b"", (name, result.stderr)
            assert (
                scalar(worker.data_dir / "cmem.sqlite3", "select count(*) from memory_event")
                == n + 1
            )
            problems = [c.what for c in _settings_checks() if c.status == "fail"]
            assert problems and all(says in p for p in problems), (name, problems)
        doctor = _cmem(worker.env, "doctor")  # the command itself, once: a message, not a traceback
        assert "Traceback" not in doctor.stdout + doctor.stderr
        assert any(
            line.startswith("FAIL") and "CLAUDE_MEM_BATCH_SIZE" in line
            for line in doctor.stdout.splitlines()
        ), doctor.stdout
    finally:
        worker.stop()


def test_corrupt_spool_files_are_set_aside_and_the_rest_is_ingested(tmp_path: Path) -> None:
    worker = new_worker(tmp_path, CLAUDE_MEM_COMPRESSOR="offline")
    spool = worker.data_dir / "spool"
    spool.mkdir(mode=0o700)
    session = Session(tmp_path, session_id="corrupt-spool")
    good = [session.prompt("from the spool"), session.bash(1), session.bash(2)]
    names = {
        "00000000000000000001.00000001.0001.claude-code.session-init.hook": good[0],
        "00000000000000000002.00000001.0002.claude-code.observation.hook": b"\x00\xff\xfe\x80 not json",
        "00000000000000000003.00000001.0003.claude-code.observation.hook": good[1][
            : len(good[1]) // 2
        ],
        "00000000000000000004.00000001.0004.claude-code.observation.hook": b'["an", "array"]',
        "00000000000000000005.00000001.0005.claude-code.no-such-event.hook": good[1],
        "garbage-name.hook": good[1],
        "00000000000000000006.00000001.0006.claude-code.observation.hook": good[2],
        "00000000000000000007.00000001.0007.claude-code.observation.hook": b"",
    }
    for name, body in names.items():
        (spool / name).write_bytes(body)
    (spool / ".00000000000000000008.00000001.0008.claude-code.observation.hook.tmp").write_bytes(
        b'{"half": '
    )
    worker.start()
    try:
        db = worker.data_dir / "cmem.sqlite3"
        wait_for(lambda: not spooled(worker.data_dir), 60, "the spool to be processed")
        assert [r[0] for r in rows(db, "select text from memory_prompt")] == ["from the spool"]
        assert [r[0] for r in rows(db, "select tool_use_id from memory_event order by id")] == [
            "toolu_rel_0002"
        ]
        failed = sorted(p.name for p in (spool / "failed").iterdir())
        assert len(failed) == 6 and "garbage-name.hook" in failed
        doctor = _cmem(worker.env, "doctor")
        assert (
            "6 spooled event(s) were refused" in doctor.stdout
            and str(spool / "failed") in doctor.stdout
        )
        # Capture goes on.
        result, _ = hook(worker.env, "observation", session.bash(3))
        assert result.returncode == 0 and result.stderr == b""
    finally:
        worker.stop()


def test_partial_migrations_are_reported_then_completed_by_the_worker(tmp_path: Path) -> None:
    worker = new_worker(tmp_path, CLAUDE_MEM_COMPRESSOR="offline")
    migrate = _cmem(worker.env, "migrate", "memory", "0002", "--noinput", "-v", "0")
    assert migrate.returncode == 0, migrate.stderr
    doctor = _cmem(worker.env, "doctor")
    assert doctor.returncode != 0 and "Traceback" not in doctor.stderr
    assert "migration(s) not applied" in doctor.stdout and "cmem migrate" in doctor.stdout
    worker.start()  # `cmem serve` applies the rest before serving
    try:
        session = Session(tmp_path, session_id="migrated")
        result, _ = hook(worker.env, "session-init", session.prompt("after migrating"))
        assert result.returncode == 0 and result.stderr == b"", result.stderr
        applied = scalar(
            worker.data_dir / "cmem.sqlite3",
            "select count(*) from django_migrations where app='memory'",
        )
        assert applied == len(
            list((Path(__file__).parents[2] / "memory" / "migrations").glob("0*.py"))
        )
        assert scalar(worker.data_dir / "cmem.sqlite3", "select count(*) from memory_prompt") == 1
    finally:
        worker.stop()
