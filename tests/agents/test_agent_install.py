"""`cmem install --gemini|--copilot|--opencode` (and `--agent NAME`), `cmem uninstall` and
`cmem doctor` for them, through the real commands in a scratch HOME: the user's own hooks
and settings are kept, the files are backed up, a second install changes nothing, the MCP
server is registered, uninstall removes exactly cmem's part."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from memory.agents.install import agents
from tests.support import CMEM


def cmem(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("COPILOT_", "GEMINI_", "OPENCODE_", "XDG_CONFIG", "QWEN_", "FACTORY_"))
    }
    env.update(HOME=str(home), PATH=os.pathsep.join([str(Path(CMEM).parent), "/usr/bin", "/bin"]))
    env["CLAUDE_MEM_DATA_DIR"] = str(home / ".cmem-data")
    return subprocess.run([CMEM, *args], env=env, capture_output=True, text=True, timeout=90)


def test_gemini_install_keeps_the_users_settings_and_is_idempotent(tmp_path: Path) -> None:
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    mine = {
        "model": {"name": "gemini-2.5-pro"},
        "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "guard.sh"}]}]},
        "mcpServers": {"other": {"command": "other-mcp"}},
    }  # fmt: skip
    settings.write_text(json.dumps(mine))
    first = cmem("install", "--gemini", home=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "backup" in first.stdout
    data = json.loads(settings.read_text())
    assert data["model"] == mine["model"]
    assert data["mcpServers"]["other"] == {"command": "other-mcp"}
    assert data["mcpServers"]["cmem"]["args"] == ["mcp"]
    before = data["hooks"]["BeforeTool"]
    assert before[0]["hooks"][0]["command"] == "guard.sh"
    assert before[1]["matcher"] == "^read_file$"
    assert before[1]["hooks"][0]["command"].endswith("hook gemini file-context")
    assert before[1]["hooks"][0]["timeout"] == 10_000  # Gemini counts milliseconds
    text = settings.read_text()
    again = cmem("install", "--agent", "gemini", home=tmp_path)
    assert "already installed" in again.stdout
    assert settings.read_text() == text

    doctor = cmem("doctor", home=tmp_path)
    assert "Gemini CLI hooks installed for all 6 events" in doctor.stdout

    removed = cmem("uninstall", "--gemini", home=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert json.loads(settings.read_text()) == mine
    assert "Gemini CLI hooks" not in cmem("doctor", home=tmp_path).stdout


def test_gemini_install_refuses_a_broken_settings_file_untouched(tmp_path: Path) -> None:
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{not json")
    out = cmem("install", "--gemini", home=tmp_path)
    assert out.returncode != 0
    assert "not valid JSON" in out.stderr
    assert settings.read_text() == "{not json"


def test_copilot_install_writes_its_own_file_and_keeps_the_users(tmp_path: Path) -> None:
    hooks = tmp_path / ".copilot" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "mine.json").write_text('{"version": 1, "hooks": {"sessionEnd": []}}')
    (tmp_path / ".copilot" / "mcp-config.json").write_text(
        json.dumps({"mcpServers": {"other": {"type": "local", "command": "x", "tools": ["*"]}}})
    )
    out = cmem("install", "--copilot", home=tmp_path)
    assert out.returncode == 0, out.stderr
    ours = json.loads((hooks / "cmem.json").read_text())
    assert ours["version"] == 1
    assert ours["hooks"]["preToolUse"][0]["bash"].endswith("hook copilot file-context")
    assert ours["hooks"]["preToolUse"][0]["timeoutSec"] == 10
    servers = json.loads((tmp_path / ".copilot" / "mcp-config.json").read_text())["mcpServers"]
    assert set(servers) == {"other", "cmem"}
    text = (hooks / "cmem.json").read_text()
    assert "already installed" in cmem("install", "--copilot", home=tmp_path).stdout
    assert (hooks / "cmem.json").read_text() == text
    assert "Copilot CLI hooks installed for all 7 events" in cmem("doctor", home=tmp_path).stdout

    assert cmem("uninstall", "--copilot", home=tmp_path).returncode == 0
    assert not (hooks / "cmem.json").exists()
    assert (hooks / ".cmem.json.removed").read_text() == text
    assert (hooks / "mine.json").exists()
    servers = json.loads((tmp_path / ".copilot" / "mcp-config.json").read_text())["mcpServers"]
    assert set(servers) == {"other"}


def test_copilot_doctor_sees_hooks_turned_off(tmp_path: Path) -> None:
    assert cmem("install", "--copilot", home=tmp_path).returncode == 0
    (tmp_path / ".copilot" / "config.json").write_text('{"disableAllHooks": true}')
    doctor = cmem("doctor", home=tmp_path)
    assert "disableAllHooks is true" in doctor.stdout
    assert doctor.returncode != 0


def test_opencode_install_writes_the_plugin_and_the_mcp_server(tmp_path: Path) -> None:
    config = tmp_path / ".config" / "opencode" / "opencode.json"
    config.parent.mkdir(parents=True)
    config.write_text(
        json.dumps({"model": "x/y", "mcp": {"other": {"type": "remote", "url": "u"}}})
    )
    out = cmem("install", "--opencode", home=tmp_path)
    assert out.returncode == 0, out.stderr
    plugin = config.parent / "plugin" / "cmem.js"
    source = plugin.read_text()
    assert "__CMEM_COMMAND__" not in source and "__CMEM_TIMEOUTS__" not in source
    assert '["hook", "opencode", event]' in source
    data = json.loads(config.read_text())
    assert data["model"] == "x/y" and set(data["mcp"]) == {"other", "cmem"}
    assert data["mcp"]["cmem"]["command"][1:] == ["mcp"]
    assert "already installed" in cmem("install", "--opencode", home=tmp_path).stdout
    assert "cmem OpenCode plugin in" in cmem("doctor", home=tmp_path).stdout

    assert cmem("uninstall", "--opencode", home=tmp_path).returncode == 0
    assert not plugin.exists()
    assert set(json.loads(config.read_text())["mcp"]) == {"other"}


def test_agents_detected_finds_config_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    for name in (
        "GEMINI_CLI_HOME",
        "COPILOT_HOME",
        "OPENCODE_CONFIG_DIR",
        "XDG_CONFIG_HOME",
        "QWEN_HOME",
        "FACTORY_HOME_OVERRIDE",
    ):
        monkeypatch.delenv(name, raising=False)
    assert agents.agents_detected() == []
    (tmp_path / ".copilot").mkdir()
    (tmp_path / ".config" / "opencode").mkdir(parents=True)
    assert agents.agents_detected() == ["copilot", "opencode"]


def test_qwen_install_keeps_the_users_settings_and_uninstall_restores_them(tmp_path: Path) -> None:
    settings = tmp_path / ".qwen" / "settings.json"
    settings.parent.mkdir()
    mine = {
        "security": {"auth": {"selectedType": "openai"}},
        "hooks": {"PreToolUse": [{"matcher": "edit", "hooks": [{"type": "command", "command": "guard.sh"}]}]},
        "mcpServers": {"other": {"command": "other-mcp"}},
    }  # fmt: skip
    settings.write_text(json.dumps(mine))
    first = cmem("install", "--qwen", home=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "backup" in first.stdout
    data = json.loads(settings.read_text())
    assert data["security"] == mine["security"]
    assert data["mcpServers"]["other"] == {"command": "other-mcp"}
    assert data["mcpServers"]["cmem"]["args"] == ["mcp"]
    pre = data["hooks"]["PreToolUse"]
    assert pre[0]["hooks"][0]["command"] == "guard.sh"
    assert pre[1]["matcher"] == "read_file"
    assert pre[1]["hooks"][0]["command"].endswith("hook qwen file-context")
    assert pre[1]["hooks"][0]["timeout"] == 10  # seconds: 1000 or more would read as ms
    text = settings.read_text()
    assert "already installed" in cmem("install", "--agent", "qwen", home=tmp_path).stdout
    assert settings.read_text() == text

    doctor = cmem("doctor", home=tmp_path)
    assert "Qwen Code hooks installed for all 7 events" in doctor.stdout
    settings.write_text(json.dumps({**data, "disableAllHooks": True}))
    assert "disableAllHooks is true" in cmem("doctor", home=tmp_path).stdout
    settings.write_text(text)

    removed = cmem("uninstall", "--qwen", home=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert json.loads(settings.read_text()) == mine
    assert "Qwen Code hooks" not in cmem("doctor", home=tmp_path).stdout


def test_kilo_install_writes_the_plugin_into_kilos_folder_only(tmp_path: Path) -> None:
    config = tmp_path / ".config" / "kilo" / "kilo.json"
    config.parent.mkdir(parents=True)
    config.write_text(
        json.dumps({"model": "x/y", "mcp": {"other": {"type": "remote", "url": "u"}}})
    )
    out = cmem("install", "--kilo", home=tmp_path)
    assert out.returncode == 0, out.stderr
    plugin = config.parent / "plugin" / "cmem.js"
    source = plugin.read_text()
    assert "__CMEM_COMMAND__" not in source
    assert '["hook", "kilo", event]' in source and '"opencode"' not in source
    assert 'startsWith("title-")' in source  # Kilo's title generator is no session
    assert not (tmp_path / ".config" / "opencode").exists()
    data = json.loads(config.read_text())
    assert data["model"] == "x/y" and set(data["mcp"]) == {"other", "cmem"}
    assert data["mcp"]["cmem"]["command"][1:] == ["mcp"]
    assert "already installed" in cmem("install", "--agent", "kilo", home=tmp_path).stdout
    assert "cmem Kilo plugin in" in cmem("doctor", home=tmp_path).stdout

    assert cmem("uninstall", "--kilo", home=tmp_path).returncode == 0
    assert not plugin.exists()
    assert set(json.loads(config.read_text())["mcp"]) == {"other"}


def test_droid_install_keeps_the_users_settings_and_uninstall_restores_them(tmp_path: Path) -> None:
    factory = tmp_path / ".factory"
    factory.mkdir()
    settings, servers = factory / "settings.json", factory / "mcp.json"
    mine = {
        "customModels": [{"model": "m", "baseUrl": "http://x", "provider": "generic-chat-completion-api"}],
        "hooks": {"PreToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "guard.sh"}]}]},
    }  # fmt: skip
    settings.write_text(json.dumps(mine))
    servers.write_text(json.dumps({"mcpServers": {"other": {"type": "stdio", "command": "o"}}}))
    first = cmem("install", "--droid", home=tmp_path)
    assert first.returncode == 0, first.stderr
    data = json.loads(settings.read_text())
    assert data["customModels"] == mine["customModels"]
    pre = data["hooks"]["PreToolUse"]
    assert pre[0]["hooks"][0]["command"] == "guard.sh"
    assert pre[1]["matcher"] == "Read"
    assert pre[1]["hooks"][0]["command"].endswith("hook droid file-context")
    assert set(json.loads(servers.read_text())["mcpServers"]) == {"other", "cmem"}
    text = settings.read_text()
    again = cmem("install", "--agent", "droid", home=tmp_path).stdout
    assert "already installed" in again and "already registered" in again
    assert settings.read_text() == text
    assert "Factory Droid hooks installed for all 6 events" in cmem("doctor", home=tmp_path).stdout

    removed = cmem("uninstall", "--droid", home=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert json.loads(settings.read_text()) == mine
    assert set(json.loads(servers.read_text())["mcpServers"]) == {"other"}
