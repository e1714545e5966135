"""`cmem sync --status` and `cmem doctor` say plainly when the sync remote is not sealed."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.travel.sync import crypto
from memory.travel.sync.engine import sync_status
from memory.worker.doctor import _sync_checks


def test_status_and_doctor_warn_about_an_unencrypted_remote(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert list(sync_status()) == ["sync: not set up (`cmem sync --remote URL`)"]
    assert _sync_checks() == []
    monkeypatch.setenv("CLAUDE_MEM_SYNC_REMOTE", "/srv/memory.git")
    assert any("keeps everything ever pushed" in line for line in sync_status())
    [check] = _sync_checks()
    assert check.status == "warn" and "not encrypted" in check.what


def test_doctor_fails_when_the_key_of_an_encrypted_remote_is_missing(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_SYNC_REMOTE", "/srv/memory.git")
    monkeypatch.setenv("CLAUDE_MEM_SYNC_ENCRYPT", "true")
    [check] = _sync_checks()
    assert check.status == "fail" and "key is missing" in check.what
    crypto.key_save(crypto.key_generate())
    [check] = _sync_checks()
    assert check.status == "ok" and "encrypted: yes" in "\n".join(sync_status())
