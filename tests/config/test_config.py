"""memory.config: env > settings.json > default, and broken files that never raise."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from memory import config
from tests.support import REPO

PORT = "CLAUDE_MEM_WORKER_PORT"
MODEL = "CLAUDE_MEM_MODEL"


def write_settings(data_dir: Path, content: str | bytes) -> None:
    path = data_dir / "settings.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())


def test_defaults_apply_without_a_file(data_dir: Path) -> None:
    values = config.load()
    assert values[MODEL] == config.SETTINGS[MODEL][0]
    assert values[PORT] == str(37700 + os.getuid() % 100)
    assert values["CLAUDE_MEM_CONTEXT_OBSERVATIONS"] == "50"
    assert values["CLAUDE_MEM_CONTEXT_SESSION_COUNT"] == "10"
    assert config.get_bool("CLAUDE_MEM_DELIVERABLES_ENABLED") is True
    assert config.problems() == []


def test_the_file_beats_the_default(data_dir: Path) -> None:
    write_settings(data_dir, json.dumps({MODEL: "claude-sonnet-4-5", PORT: "40001"}))
    assert config.get(MODEL) == "claude-sonnet-4-5"
    assert config.get_int(PORT) == 40001


def test_the_environment_beats_the_file(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_settings(data_dir, json.dumps({MODEL: "from-file", PORT: "40001"}))
    monkeypatch.setenv(MODEL, "from-env")
    assert config.get(MODEL) == "from-env"
    assert config.get_int(PORT) == 40001  # keys the env does not set still come from the file


def test_an_empty_env_value_still_wins(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_settings(data_dir, json.dumps({"CLAUDE_MEM_EXCLUDED_PROJECTS": "secret"}))
    monkeypatch.setenv("CLAUDE_MEM_EXCLUDED_PROJECTS", "")
    assert config.get_list("CLAUDE_MEM_EXCLUDED_PROJECTS") == []


def test_a_snapshot_answers_one_load_for_its_request(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with config.settings_snapshot():
        before = config.load()
        monkeypatch.setenv(MODEL, "claude-from-env")
        before["mutated"] = "by the caller"
        with config.settings_snapshot():  # nested: the outer snapshot stands
            assert config.get(MODEL) == config.SETTINGS[MODEL][0]
            assert "mutated" not in config.load()  # a copy each time
        config.save({PORT: "40002"})  # what is saved applies at once
        assert config.get(MODEL) == "claude-from-env" and config.get_int(PORT) == 40002
    assert config.get(MODEL) == "claude-from-env"


def test_the_data_dir_is_read_at_call_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "elsewhere"
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(other))
    assert config.data_dir() == other
    assert config.ensure_data_dir() == other
    assert stat.S_IMODE(other.stat().st_mode) == 0o700


def test_the_settings_file_is_created_with_every_default_user_only(data_dir: Path) -> None:
    config.ensure_settings_file()
    path = data_dir / "settings.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    written = json.loads(path.read_text())
    assert set(written) == set(config.SETTINGS) - {"CLAUDE_MEM_DATA_DIR"}
    assert all(isinstance(v, str) for v in written.values())


def test_an_existing_settings_file_is_left_alone(data_dir: Path) -> None:
    write_settings(data_dir, json.dumps({MODEL: "mine"}))
    config.ensure_settings_file()
    assert json.loads((data_dir / "settings.json").read_text()) == {MODEL: "mine"}


def test_save_merges_and_writes_atomically(data_dir: Path) -> None:
    write_settings(data_dir, json.dumps({MODEL: "mine", PORT: "40001"}))
    config.save({PORT: "40002"})
    assert json.loads((data_dir / "settings.json").read_text()) == {MODEL: "mine", PORT: "40002"}
    assert [p.name for p in data_dir.iterdir() if p.name.endswith(".tmp")] == []


def test_save_over_a_broken_file_keeps_a_copy(data_dir: Path) -> None:
    write_settings(data_dir, "{oops")
    config.save({PORT: "40002"})
    assert json.loads((data_dir / "settings.json").read_text()) == {PORT: "40002"}
    assert (data_dir / "settings.json.broken").read_text() == "{oops"


def test_save_keeps_the_file_when_an_unrelated_value_was_bad(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_settings(data_dir, json.dumps({MODEL: "mine"}))
    monkeypatch.setenv(PORT, "not-a-port")
    config.get_int(PORT)  # records a problem that has nothing to do with the file
    config.save({"CLAUDE_MEM_LOG_LEVEL": "DEBUG"})
    assert json.loads((data_dir / "settings.json").read_text()) == {
        MODEL: "mine",
        "CLAUDE_MEM_LOG_LEVEL": "DEBUG",
    }


def test_a_file_that_is_not_json_falls_back_to_defaults(data_dir: Path) -> None:
    write_settings(data_dir, "{'CLAUDE_MEM_MODEL': 'single quotes'")
    assert config.load()[MODEL] == config.SETTINGS[MODEL][0]
    [problem] = config.problems()
    assert (
        "settings.json" in problem and "not valid JSON" in problem and "using defaults" in problem
    )


@pytest.mark.parametrize("content", ["[1, 2]", '"CLAUDE_MEM_MODEL"', "42", "null"])
def test_a_file_that_is_not_an_object_falls_back_to_defaults(data_dir: Path, content: str) -> None:
    write_settings(data_dir, content)
    assert config.load()[MODEL] == config.SETTINGS[MODEL][0]
    [problem] = config.problems()
    assert "expected a JSON object" in problem


def test_invalid_utf8_and_deep_nesting_do_not_raise(data_dir: Path) -> None:
    write_settings(data_dir, b'{"CLAUDE_MEM_MODEL": "\xff\xfe"}')
    assert config.load()[MODEL] == config.SETTINGS[MODEL][0]
    assert config.problems()
    write_settings(data_dir, "[" * 100_000 + "]" * 100_000)
    assert config.load()[MODEL] == config.SETTINGS[MODEL][0]
    assert "not valid JSON" in config.problems()[0]


def test_an_unreadable_path_does_not_raise(data_dir: Path) -> None:
    (data_dir / "settings.json").mkdir()
    assert config.load()[MODEL] == config.SETTINGS[MODEL][0]
    assert "cannot read" in config.problems()[0]


def test_a_value_of_the_wrong_type_names_the_key_and_keeps_the_others(data_dir: Path) -> None:
    write_settings(
        data_dir,
        json.dumps({PORT: ["40001"], "CLAUDE_MEM_LOG_LEVEL": {"level": "x"}, MODEL: "mine"}),
    )
    values = config.load()
    assert values[PORT] == config.SETTINGS[PORT][0]
    assert values[MODEL] == "mine"
    problems = config.problems()
    assert any(p.startswith(f"{PORT}: expected a string") for p in problems)
    assert any(p.startswith("CLAUDE_MEM_LOG_LEVEL: expected a string") for p in problems)


def test_numbers_and_booleans_are_accepted_as_their_text(data_dir: Path) -> None:
    write_settings(data_dir, json.dumps({PORT: 40001, "CLAUDE_MEM_DELIVERABLES_ENABLED": False}))
    assert config.get_int(PORT) == 40001
    assert config.get_bool("CLAUDE_MEM_DELIVERABLES_ENABLED") is False
    assert config.problems() == []


def test_an_unusable_value_names_the_key_and_uses_the_default(data_dir: Path) -> None:
    write_settings(
        data_dir, json.dumps({PORT: "port eighty", "CLAUDE_MEM_DELIVERABLES_ENABLED": "maybe"})
    )
    values = config.load()
    assert config.get_int(PORT, values) == int(config.SETTINGS[PORT][0])
    assert config.get_bool("CLAUDE_MEM_DELIVERABLES_ENABLED", values) is True
    problems = config.problems()
    assert any(PORT in p and "'port eighty'" in p and "whole number" in p for p in problems)
    assert any("CLAUDE_MEM_DELIVERABLES_ENABLED" in p and "true/false" in p for p in problems)


def test_an_unknown_key_with_a_bad_value_does_not_raise(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_SOMETHING_NEW", "x")
    assert config.get_int("CLAUDE_MEM_SOMETHING_NEW") == 0
    assert config.get_bool("CLAUDE_MEM_SOMETHING_NEW") is False


def test_a_utf8_bom_is_accepted(data_dir: Path) -> None:
    write_settings(data_dir, "\ufeff" + json.dumps({MODEL: "with-bom"}))
    assert config.get(MODEL) == "with-bom"
    assert config.problems() == []


def test_the_legacy_env_layout_is_read(data_dir: Path) -> None:
    write_settings(data_dir, json.dumps({"env": {MODEL: "legacy", PORT: "40003"}, "other": 1}))
    assert config.get(MODEL) == "legacy"
    assert config.get_int(PORT) == 40003


def test_django_boots_with_a_broken_settings_file(data_dir: Path) -> None:
    """The hook API and every command load Django settings through memory.config."""
    write_settings(data_dir, "{not json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env.update(CLAUDE_MEM_DATA_DIR=str(data_dir), DJANGO_SETTINGS_MODULE="cmem_site.settings")
    code = "import django; django.setup(); from django.conf import settings; print(settings.DATABASES['default']['ENGINE'])"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "sqlite3" in done.stdout
