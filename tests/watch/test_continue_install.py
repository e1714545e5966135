"""`cmem install --continue`, `uninstall --continue` and `doctor` through the real commands in
a scratch HOME: watching turned on in cmem's settings, cmem's MCP server added to the user's
~/.continue/config.yaml beside their own entries (backed up), a second install changes
nothing, uninstall takes back exactly what install added."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml

from tests.support import CMEM

USERS = """\
name: my setup
version: 1.0.0
schema: v1
models:
  - name: local
    provider: ollama
    model: qwen2.5-coder
mcpServers:
  - name: mine
    command: my-mcp
    args: [--fast]
"""


def cmem(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONTINUE_", "CLAUDE_MEM_"))}
    env.update(HOME=str(home), PATH=os.pathsep.join([str(Path(CMEM).parent), "/usr/bin", "/bin"]))
    env["CLAUDE_MEM_DATA_DIR"] = str(home / ".cmem-data")
    return subprocess.run([CMEM, *args], env=env, capture_output=True, text=True, timeout=90)


def settings(home: Path) -> dict[str, str]:
    path = home / ".cmem-data" / "settings.json"
    return json.loads(path.read_text()) if path.exists() else {}


def test_install_registers_mcp_beside_the_users_and_uninstall_takes_back_only_that(
    tmp_path: Path,
) -> None:
    config = tmp_path / ".continue" / "config.yaml"
    config.parent.mkdir()
    config.write_text(USERS)
    first = cmem("install", "--continue", home=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "watching Continue's sessions" in first.stdout and "backup" in first.stdout
    assert settings(tmp_path)["CLAUDE_MEM_WATCH"] == "continue"
    # The sessions already on disk are not taken in: the watcher's state begins now.
    state = json.loads((tmp_path / ".cmem-data" / "watch" / "continue.json").read_text())
    assert state["files"] == {} and state["since"] > 0
    data = yaml.safe_load(config.read_text())
    assert data["models"] == yaml.safe_load(USERS)["models"]
    assert data["mcpServers"][0] == {"name": "mine", "command": "my-mcp", "args": ["--fast"]}
    cmem_entry = data["mcpServers"][1]
    assert cmem_entry["name"] == "cmem" and cmem_entry["args"] == ["mcp"]
    assert cmem_entry["env"] == {"CLAUDE_MEM_DATA_DIR": str(tmp_path / ".cmem-data")}
    backups = list(config.parent.glob("config.yaml.bak.*"))
    assert [b.read_text() for b in backups] == [USERS]

    text = config.read_text()
    again = cmem("install", "--agent", "continue", home=tmp_path)
    assert "already on" in again.stdout and "already registered" in again.stdout
    assert config.read_text() == text

    doctor = cmem("doctor", home=tmp_path)
    assert "Continue CLI sessions folder" in doctor.stdout  # no session yet: a warning
    assert "MCP server is not registered" not in doctor.stdout

    removed = cmem("uninstall", "--continue", home=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert yaml.safe_load(config.read_text()) == yaml.safe_load(USERS)
    assert settings(tmp_path)["CLAUDE_MEM_WATCH"] == ""
    assert "Continue CLI" not in cmem("doctor", home=tmp_path).stdout
    text = config.read_text()
    twice = cmem("uninstall", "--continue", home=tmp_path)  # idempotent
    assert (
        twice.returncode == 0 and "removed" not in twice.stdout and "turned off" not in twice.stdout
    )
    assert config.read_text() == text


def test_no_config_yaml_is_not_created_and_watching_still_turns_on(tmp_path: Path) -> None:
    # Without ~/.continue/config.yaml `cn` loads its default configuration: a file made by
    # cmem would replace it.
    out = cmem("install", "--continue", home=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "MCP server not registered: no" in out.stdout
    assert not (tmp_path / ".continue" / "config.yaml").exists()
    assert settings(tmp_path)["CLAUDE_MEM_WATCH"] == "continue"


def test_a_broken_config_yaml_is_refused_untouched(tmp_path: Path) -> None:
    config = tmp_path / ".continue" / "config.yaml"
    config.parent.mkdir()
    config.write_text("models: [unclosed\n")
    out = cmem("install", "--continue", home=tmp_path)
    assert out.returncode != 0
    assert "is not YAML" in out.stderr
    assert config.read_text() == "models: [unclosed\n"
