"""`cmem install --codex`, `cmem uninstall --codex` and the doctor's trust check, through the
real commands; trust through the real `codex app-server` when the pinned CLI is installed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from memory.agents.install import codex as codex_install
from memory.agents.install import codex_mcp
from tests.support import CMEM, CODEX_FIXTURES, REPO

NODE_CODEX = REPO / ".e2e-node" / "node_modules" / ".bin" / "codex"
UNRELATED = {
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "python3 guard.py"}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
    "description": "the user's own hooks",
}


def cmem(*args: str, home: Path, codex: bool) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"CMEM_CODEX_BIN"}}
    env.update(HOME=str(home), CODEX_HOME=str(home / ".codex"), HTTPS_PROXY="http://127.0.0.1:9")
    env["PATH"] = os.pathsep.join([str(Path(CMEM).parent), "/usr/bin", "/bin"])
    if codex:
        env["CMEM_CODEX_BIN"] = str(NODE_CODEX)
    return subprocess.run(
        [CMEM, *args], env=env, capture_output=True, text=True, timeout=90, cwd=home
    )


def need_codex() -> None:
    if NODE_CODEX.exists():
        return
    if os.environ.get("CMEM_E2E_REQUIRED"):
        pytest.fail("the Codex CLI is not installed in .e2e-node (see .ci/run)")
    pytest.skip("the Codex CLI is not installed in .e2e-node")


def test_install_keeps_unrelated_hooks_is_idempotent_and_uninstalls(tmp_path: Path) -> None:
    path = tmp_path / ".codex" / "hooks.json"
    path.parent.mkdir()
    path.write_text(json.dumps(UNRELATED))
    first = codex_install.hooks_install(path=path, command="/opt/my tools/cmem")
    assert first.changed and first.backup and json.loads(first.backup.read_text()) == UNRELATED
    data = json.loads(path.read_text())
    assert data["description"] == UNRELATED["description"]
    assert data["hooks"]["PreToolUse"][0] == UNRELATED["hooks"]["PreToolUse"][0]
    ours = data["hooks"]["PreToolUse"][1]
    assert ours == {
        "matcher": "^Bash$",
        "hooks": [
            {
                "type": "command",
                "command": "'/opt/my tools/cmem' hook codex file-context",
                "timeout": 10,
            }
        ],
    }
    assert not any(h.get("async") for g in sum(data["hooks"].values(), []) for h in g["hooks"])
    assert len(codex_install.installed_commands(path)) == len(codex_install.HOOKS)
    assert not codex_install.hooks_install(path=path, command="/opt/my tools/cmem").changed
    removed = codex_install.hooks_uninstall(path=path)
    assert removed.changed
    assert json.loads(path.read_text()) == UNRELATED


def test_install_without_codex_says_what_to_do_and_doctor_reports_untrusted(tmp_path: Path) -> None:
    done = cmem("install", "--codex", home=tmp_path, codex=False)
    assert done.returncode == 0, done.stderr
    assert "not trusted yet" in done.stdout and "trust" in done.stdout
    assert codex_install.installed_commands(tmp_path / ".codex" / "hooks.json")
    doctor = cmem("doctor", home=tmp_path, codex=False)
    assert "cmem Codex hook(s) not trusted" in doctor.stdout, doctor.stdout


def test_trust_recorded_reads_config_toml(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    home.mkdir()
    example = (CODEX_FIXTURES / "config.toml.hooks_state.example.toml").read_text()
    (home / "config.toml").write_text(example.replace("/home/dev/.codex", str(home)))
    trusted = f"{home}/hooks.json:pre_tool_use:0:0"
    missing = f"{home}/hooks.json:stop:0:0"
    assert codex_install.trust_recorded(home, [trusted, missing]) == [missing]


def test_install_trusts_exactly_cmems_hooks_through_app_server(tmp_path: Path) -> None:
    need_codex()
    codex_home = tmp_path / ".codex"
    codex_home.mkdir()
    (codex_home / "hooks.json").write_text(json.dumps(UNRELATED))
    (codex_home / "config.toml").write_text("[features]\nhooks = true\n")
    done = cmem("install", "--codex", home=tmp_path, codex=True)
    assert done.returncode == 0, done.stderr
    assert "codex says" not in done.stdout, done.stdout
    assert f"trusted {len(codex_install.HOOKS)} cmem hook(s)" in done.stdout, done.stdout
    config = (codex_home / "config.toml").read_text()
    assert config.count("trusted_hash") == len(codex_install.HOOKS)
    # The user's own hooks were not trusted on their behalf.
    assert ":pre_tool_use:0:0" not in config and ":stop:0:0" not in config
    again = cmem("install", "--codex", home=tmp_path, codex=True)
    assert "already trusted" in again.stdout and "MCP server already registered" in again.stdout
    # The real binary reads cmem's [mcp_servers.cmem] as a stdio server running `cmem mcp`.
    got = subprocess.run(
        [str(NODE_CODEX), "mcp", "get", "cmem", "--json"], capture_output=True, text=True,
        env={"HOME": str(tmp_path), "CODEX_HOME": str(codex_home), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )  # fmt: skip
    transport = json.loads(got.stdout)["transport"]
    assert (Path(transport["command"]).name, transport["args"]) == ("cmem", ["mcp"]), got.stdout
    assert Path(transport["command"]).is_absolute() and json.loads(got.stdout)["enabled"]
    doctor = cmem("doctor", home=tmp_path, codex=True)
    assert "cmem Codex hooks trusted" in doctor.stdout, doctor.stdout
    assert "cmem MCP server in" in doctor.stdout, doctor.stdout
    # A changed definition is untrusted again until install runs.
    hooks = json.loads((codex_home / "hooks.json").read_text())
    hooks["hooks"]["Stop"][1]["hooks"][0]["timeout"] = 61
    (codex_home / "hooks.json").write_text(json.dumps(hooks))
    doctor = cmem("doctor", home=tmp_path, codex=True)
    assert "1 cmem Codex hook(s) not trusted" in doctor.stdout, doctor.stdout
    gone = cmem("uninstall", "--codex", home=tmp_path, codex=True)
    assert "removed" in gone.stdout and "cmem MCP server removed" in gone.stdout
    assert json.loads((codex_home / "hooks.json").read_text()) == UNRELATED
    assert "mcp_servers" not in (codex_home / "config.toml").read_text()


USER_CONFIG = """# my Codex config
model = "o3"  # the one I like

[mcp_servers.docs]
command = "docs-mcp"
args = ["--stdio"]

[hooks.state."/x/hooks.json:stop:0:0"]
enabled = true
"""


def test_mcp_register_keeps_the_users_config_and_uninstall_restores_it(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(USER_CONFIG)
    first = codex_mcp.mcp_register(home=tmp_path, command="/opt/cmem/bin/cmem", data_dir="/d")
    assert first.state == "set" and first.backup and first.backup.read_text() == USER_CONFIG
    text = path.read_text()
    # Everything of the user's, comments and layout included, is still there as it was.
    assert text.startswith(USER_CONFIG.split("\n[hooks")[0])
    assert '[hooks.state."/x/hooks.json:stop:0:0"]\nenabled = true\n' in text
    assert codex_mcp.mcp_registered(tmp_path) == {
        "command": "/opt/cmem/bin/cmem", "args": ["mcp"], "env": {"CLAUDE_MEM_DATA_DIR": "/d"}
    }  # fmt: skip
    assert codex_mcp.mcp_register(home=tmp_path, command="/opt/cmem/bin/cmem", data_dir="/d").state == "unchanged"  # fmt: skip
    # Another cmem (moved, default data dir): the entry follows, a user's timeout stays.
    path.write_text(
        path.read_text().replace('args = ["mcp"]', 'args = ["mcp"]\ntool_timeout_sec = 90')
    )
    moved = codex_mcp.mcp_register(home=tmp_path, command="/usr/local/bin/cmem")
    assert moved.state == "set"
    assert codex_mcp.mcp_registered(tmp_path) == {
        "command": "/usr/local/bin/cmem", "args": ["mcp"], "tool_timeout_sec": 90
    }  # fmt: skip
    assert codex_mcp.mcp_unregister(home=tmp_path).state == "removed"
    assert path.read_text() == USER_CONFIG
    assert codex_mcp.mcp_unregister(home=tmp_path).state == "absent"


def test_mcp_register_leaves_a_foreign_server_and_bad_toml_alone(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    foreign = '[mcp_servers.cmem]\ncommand = "npx"\nargs = ["other-cmem"]\n'
    path.write_text(foreign)
    assert codex_mcp.mcp_register(home=tmp_path, command="/bin/cmem").state == "foreign"
    assert codex_mcp.mcp_unregister(home=tmp_path).state == "foreign"
    assert path.read_text() == foreign
    assert codex_mcp.mcp_doctor_checks(tmp_path)[0].status == "warn"
    path.write_text("model = [unclosed\n")
    assert codex_mcp.mcp_register(home=tmp_path, command="/bin/cmem").state == "unreadable"
    assert path.read_text() == "model = [unclosed\n"
    fresh = tmp_path / "fresh"
    assert codex_mcp.mcp_register(home=fresh, command="/bin/cmem").state == "set"
    assert (
        fresh / "config.toml"
    ).read_text() == '[mcp_servers.cmem]\ncommand = "/bin/cmem"\nargs = ["mcp"]\n\n'
    assert codex_mcp.mcp_doctor_checks(fresh)[0].status == "fail"  # /bin/cmem does not exist
