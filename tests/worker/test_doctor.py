"""`cmem doctor`: each problem found, with its fix, and a nonzero exit."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.agents.install import claude_code as installer
from memory.hookclient import client as hookclient

pytestmark = pytest.mark.django_db


def _doctor(settings_path: Path) -> tuple[str, bool]:
    out = io.StringIO()
    try:
        call_command("doctor", claude_settings=settings_path, stdout=out)
    except CommandError:
        return out.getvalue(), False
    return out.getvalue(), True


def test_a_healthy_install_passes(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    # As `cmem install` writes it: the test's data dir is not the default one.
    installer.settings_install(
        path=path, command=str(installer.own_executable()), data_dir=installer.custom_data_dir()
    )
    text, ok = _doctor(path)
    assert ok, text
    assert (
        "hooks installed for all" in text and "migrations applied" in text and "spool empty" in text
    )
    assert "hooks reach this data dir" in text
    assert "worker not running" in text and "fix: " in text  # a warning, with its fix


def test_an_older_async_failure_hook_is_named_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    installer.settings_install(
        path=path, command=str(installer.own_executable()), data_dir=installer.custom_data_dir()
    )
    data = json.loads(path.read_text())
    data["hooks"]["PostToolUseFailure"][0]["hooks"][0]["async"] = True
    path.write_text(json.dumps(data))
    text, _ = _doctor(path)
    assert "PostToolUseFailure" in text and "failure recall cannot reach the model" in text
    assert "fix: run `cmem install` again" in text


def test_missing_hooks_fail_with_the_fix(tmp_path: Path) -> None:
    text, ok = _doctor(tmp_path / "absent.json")
    assert not ok
    assert "cmem hooks are not installed" in text and "fix: run `cmem install`" in text


def test_broken_settings_json_and_refused_spool_files_fail(tmp_path: Path, data_dir: Path) -> None:
    path = tmp_path / "settings.json"
    installer.settings_install(path=path, command=str(installer.own_executable()))
    (data_dir / "settings.json").write_text("{oops")
    failed = data_dir / "spool" / "failed"
    failed.mkdir(parents=True)
    (failed / "x.hook").write_bytes(b"{")
    hookclient.spool_write("claude-code", "observation", b"{}")
    text, ok = _doctor(path)
    assert not ok
    assert "not valid JSON" in text and f"fix: edit {data_dir / 'settings.json'}" in text
    assert "1 spooled event(s) were refused" in text
    assert "1 event(s) wait in the spool" in text


def test_the_api_key_is_never_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-doctor-must-not-print-this-0123456789")
    text, _ = _doctor(tmp_path / "s.json")
    assert (
        "observer provider: anthropic (auto: Anthropic API key from ANTHROPIC_API_KEY "
        "(environment)); key from ANTHROPIC_API_KEY (environment)"
    ) in text
    assert "doctor-must-not-print" not in text


def test_doctor_names_the_provider_and_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    text, _ = _doctor(tmp_path / "s.json")
    assert (
        "observer provider: offline (no API key: no Anthropic key, no logged-in `claude` CLI"
        in text
    )
    monkeypatch.setenv("CLAUDE_MEM_PROVIDER", "openrouter")
    text, ok = _doctor(tmp_path / "s.json")
    assert not ok
    assert (
        "observer provider: offline, because CLAUDE_MEM_PROVIDER=openrouter but no CLAUDE_MEM_OPENROUTER_API_KEY"
        in text
    )


def test_the_isolated_hook_entry_is_checked_to_resolve(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    entry = installer.hook_entry_argv()
    installer.settings_install(
        path=path, command="cmem", data_dir=installer.custom_data_dir(), entry=entry
    )
    text, ok = _doctor(path)
    assert ok, text
    assert f"hook entry resolves: {entry[0]} -I -S, cmem from {installer.package_root()}" in text
    # An entry whose package root is gone (cmem moved or uninstalled) fails, with the fix.
    gone = [
        *entry[:4],
        entry[4].replace(repr(str(installer.package_root())), repr(str(tmp_path / "gone"))),
    ]
    installer.settings_install(
        path=path, command="cmem", data_dir=installer.custom_data_dir(), entry=gone
    )
    text, ok = _doctor(path)
    assert not ok
    assert f"cmem from {tmp_path / 'gone'}, which does not start" in text
    assert "fix: run `cmem install` again" in text
