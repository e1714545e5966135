"""`cmem install` / `cmem uninstall` through the real entry point, on real settings files."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from memory.agents.install import claude_code as installer
from tests.support import CMEM

OTHER_HOOKS = {
    "PreToolUse": [
        {
            "matcher": "Bash",
            "hooks": [{"type": "command", "command": "/usr/local/bin/guard.sh", "timeout": 5}],
        }
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
}


def _cmem(*args: str, home: Path, path_env: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_")}
    # The default data dir of this HOME: hooks then carry no --data-dir (tested on its own).
    env.update(HOME=str(home), CLAUDE_MEM_DATA_DIR=str(home / ".claude-mem"))
    if path_env is not None:
        env["PATH"] = path_env
    return subprocess.run([CMEM, *args], env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def settings_file(tmp_path: Path) -> Path:
    path = tmp_path / "settings.json"
    path.write_text(
        json.dumps(
            {"model": "opus", "permissions": {"allow": ["Read"]}, "hooks": OTHER_HOOKS}, indent=4
        )
    )
    return path


def test_install_uninstall_round_trip_leaves_other_hooks_untouched(
    tmp_path: Path, settings_file: Path
) -> None:
    original = json.loads(settings_file.read_text())
    result = _cmem("install", "--settings", str(settings_file), home=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(settings_file.read_text())
    assert data["model"] == "opus" and data["permissions"] == {"allow": ["Read"]}
    assert data["hooks"]["PreToolUse"][0] == OTHER_HOOKS["PreToolUse"][0]
    assert data["hooks"]["Stop"][0] == OTHER_HOOKS["Stop"][0]
    assert list(tmp_path.glob("settings.json.bak.*"))
    result = _cmem("uninstall", "--settings", str(settings_file), home=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(settings_file.read_text()) == original


def test_install_writes_the_six_entries_in_exec_form(tmp_path: Path, settings_file: Path) -> None:
    _cmem("install", "--settings", str(settings_file), home=tmp_path, path_env="/usr/bin:/bin")
    hooks = json.loads(settings_file.read_text())["hooks"]
    ours = {
        event: [h for g in groups for h in g["hooks"] if installer.is_cmem_hook(h)]
        for event, groups in hooks.items()
    }
    assert {e: [installer.hook_args(h)[2] for h in hs] for e, hs in ours.items() if hs} == {
        "SessionStart": ["context"],
        "UserPromptSubmit": ["session-init"],
        "PostToolUse": ["observation"],
        "PostToolUseFailure": ["observation"],
        "PreToolUse": ["file-context"],
        "Stop": ["summarize"],
        "SessionEnd": ["session-end"],
    }
    # This installation's interpreter with the -I -S stdlib entry, whatever that PATH holds.
    entry = ours["PostToolUse"][0]
    assert Path(entry["command"]).parent == Path(CMEM).parent and entry["async"] is True
    assert entry["args"][:3] == ["-I", "-S", "-c"] and "memory.hookclient.entry" in entry["args"][3]
    # A failed tool's hook waits (briefly) so failure recall's context reaches the model.
    failure = ours["PostToolUseFailure"][0]
    assert "async" not in failure and 1 <= failure["timeout"] <= 10
    assert ours["SessionEnd"][0]["timeout"] >= 5
    matchers = {event: groups[-1].get("matcher") for event, groups in hooks.items()}
    assert (
        matchers["SessionStart"] == "startup|resume|clear|compact"
        and matchers["PreToolUse"] == "Read"
    )


def test_install_writes_the_isolated_entry_and_it_runs_as_cmem_hook(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    _cmem(
        "install",
        "--settings",
        str(path),
        home=tmp_path,
        path_env=f"{Path(CMEM).parent}:/usr/bin:/bin",
    )
    hook = json.loads(path.read_text())["hooks"]["Stop"][0]["hooks"][0]
    python, *prefix = hook["command"], *hook["args"][:4]
    assert hook == {
        "type": "command",
        "command": python,
        "args": [*prefix, "hook", "claude-code", "summarize"],
        "timeout": 60,
    }
    assert prefix[:3] == ["-I", "-S", "-c"]
    # The installed command is `cmem hook`: worker down, the event is spooled, exit 0.
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_")}
    env.update(HOME=str(tmp_path), CLAUDE_MEM_DATA_DIR=str(tmp_path / "data"), PATH="/usr/bin:/bin",
               CMEM_NO_SPAWN="1")  # fmt: skip
    done = subprocess.run(
        [python, *hook["args"]],
        input=b'{"session_id": "s1", "cwd": "/tmp", "last_assistant_message": "ok"}',
        env=env, capture_output=True, cwd=tmp_path, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0 and b"spool" in done.stderr, done.stderr
    assert list((tmp_path / "data" / "spool").glob("*.hook"))


def test_install_is_idempotent(tmp_path: Path, settings_file: Path) -> None:
    _cmem("install", "--settings", str(settings_file), home=tmp_path)
    first = settings_file.read_bytes()
    backups = set(tmp_path.glob("settings.json.bak.*"))
    result = _cmem("install", "--settings", str(settings_file), home=tmp_path)
    assert "already installed" in result.stdout
    assert settings_file.read_bytes() == first
    assert set(tmp_path.glob("settings.json.bak.*")) == backups


def test_install_upgrades_an_older_async_failure_hook_once(
    tmp_path: Path, settings_file: Path
) -> None:
    """An install from before failure recall ran PostToolUseFailure async: installing again
    makes it synchronous, keeps everything else, and a third install changes nothing."""
    _cmem("install", "--settings", str(settings_file), home=tmp_path)
    data = json.loads(settings_file.read_text())
    for group in data["hooks"]["PostToolUseFailure"]:
        for hook in group["hooks"]:
            hook.update({"async": True, "timeout": 30})
    settings_file.write_text(json.dumps(data, indent=2))
    assert installer.outdated_events(installer.installed_events(settings_file)) == [
        "PostToolUseFailure"
    ]
    result = _cmem("install", "--settings", str(settings_file), home=tmp_path)
    assert result.returncode == 0, result.stderr
    upgraded = json.loads(settings_file.read_text())
    (failure,) = [h for g in upgraded["hooks"]["PostToolUseFailure"] for h in g["hooks"]]
    assert "async" not in failure and failure["timeout"] == 5
    assert upgraded["hooks"]["PreToolUse"][0] == OTHER_HOOKS["PreToolUse"][0]
    assert installer.outdated_events(installer.installed_events(settings_file)) == []
    again = settings_file.read_bytes()
    assert (
        "already installed"
        in _cmem("install", "--settings", str(settings_file), home=tmp_path).stdout
    )
    assert settings_file.read_bytes() == again


def test_an_unparseable_settings_file_is_refused_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"hooks": {,}')
    result = _cmem("install", "--settings", str(path), home=tmp_path)
    assert result.returncode != 0
    assert "not valid JSON" in result.stderr and "Nothing was changed" in result.stderr
    assert path.read_text() == '{"hooks": {,}'
    assert not list(tmp_path.glob("settings.json.bak.*"))


def test_install_registers_the_mcp_server_and_uninstall_removes_it(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    (tmp_path / ".claude.json").write_text(
        json.dumps({"projects": {"/x": {}}, "mcpServers": {"other": {"command": "o"}}})
    )
    _cmem("install", "--settings", str(path), home=tmp_path)
    servers = json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]
    assert set(servers) == {"other", "cmem"}
    _cmem("uninstall", "--settings", str(path), home=tmp_path)
    data = json.loads((tmp_path / ".claude.json").read_text())
    assert data == {"projects": {"/x": {}}, "mcpServers": {"other": {"command": "o"}}}


def test_plugin_dir_gets_the_same_hooks(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin"
    result = _cmem(
        "install",
        "--settings",
        str(tmp_path / "s.json"),
        "--plugin-dir",
        str(plugin),
        "--no-mcp",
        home=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    hooks = json.loads((plugin / "hooks" / "hooks.json").read_text())["hooks"]
    assert hooks["PreToolUse"][0]["hooks"][0]["args"] == ["hook", "claude-code", "file-context"]
    assert (plugin / ".claude-plugin" / "plugin.json").exists()
