"""Hooks that work however cmem was installed, one install route at a time, the plugin
folder in the repo, `cmem setup`, and the error pages."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from memory.agents.install.plugin import plugin_files
from tests.support.paths import CMEM, REPO
from tests.support.worker import free_port, make_worker_env


def _env(home: Path, data: Path, path: str = "/usr/bin:/bin") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "CMEM_"))}
    env.update(HOME=str(home), CLAUDE_MEM_DATA_DIR=str(data), PATH=path)
    return env


def _run(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run([CMEM, *args], env=env, capture_output=True, text=True, timeout=timeout)


def test_install_from_a_venv_writes_the_absolute_path_and_the_data_dir(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    data = tmp_path / "elsewhere"
    done = _run("install", "--settings-file", str(settings), env=_env(tmp_path, data))
    assert done.returncode == 0, done.stderr
    hook = json.loads(settings.read_text())["hooks"]["PreToolUse"][0]["hooks"][0]
    # This installation's interpreter with the -I -S stdlib entry (no PATH lookup at all).
    assert Path(hook["command"]).parent == Path(CMEM).parent
    assert hook["args"][:3] == ["-I", "-S", "-c"] and "memory.hookclient.entry" in hook["args"][3]
    assert hook["args"][4:] == [
        "hook",
        "claude-code",
        "file-context",
        "--data-dir",
        str(data.resolve()),
    ]
    server = json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]["cmem"]
    assert server["command"] == CMEM and server["env"] == {
        "CLAUDE_MEM_DATA_DIR": str(data.resolve())
    }
    assert (data / "install-route").read_text().strip() == "settings"
    # Doctor: each installed command resolves and reaches this data dir...
    doctor = _run("doctor", "--settings-file", str(settings), env=_env(tmp_path, data))
    assert f"ok    hooks reach this data dir ({data.resolve()})" in doctor.stdout
    assert f"ok    MCP server: {CMEM} mcp" in doctor.stdout
    assert f"ok    hook entry resolves: {hook['command']} -I -S" in doctor.stdout
    # ...and says so when this cmem uses another one than the hooks.
    other = tmp_path / "other"
    doctor = _run("doctor", "--settings-file", str(settings), env=_env(tmp_path, other))
    assert doctor.returncode == 1
    assert (
        f"FAIL  hooks write to {data.resolve()}, but this cmem uses {other.resolve()}"
        in doctor.stdout
    )


def test_the_data_dir_flag_of_a_hook_is_where_it_writes(tmp_path: Path) -> None:
    data = tmp_path / "hookdata"
    env = _env(tmp_path, tmp_path / "not-this-one")
    env["CLAUDE_MEM_WORKER_PORT"] = str(free_port())
    payload = json.dumps({"session_id": "s-dd", "cwd": str(tmp_path), "hook_event_name": "SessionEnd", "reason": "other"})  # fmt: skip
    done = subprocess.run(
        [CMEM, "hook", "claude-code", "session-end", "--data-dir", str(data)], input=payload,
        env={**env, "CMEM_NO_SPAWN": "1"}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == ""
    assert data.is_dir() and not (tmp_path / "not-this-one").exists()
    _run("stop", env={**env, "CLAUDE_MEM_DATA_DIR": str(data)})


def test_install_sees_the_plugin_route_and_writes_no_second_set_of_hooks(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"enabledPlugins": {"cmem@cmem": True}}))
    data = tmp_path / ".claude-mem"
    done = _run("install", "--settings-file", str(settings), env=_env(tmp_path, data))
    assert done.returncode == 0
    assert "plugin cmem@cmem is installed" in done.stdout
    assert "hooks" not in json.loads(settings.read_text())
    assert (data / "install-route").read_text().strip() == "plugin"
    doctor = _run("doctor", "--settings-file", str(settings), env=_env(tmp_path, data))
    assert "ok    hooks and MCP server come from the Claude Code plugin cmem@cmem" in doctor.stdout
    # Both routes at once is a problem doctor names.
    settings.write_text(json.dumps({"enabledPlugins": {"cmem@cmem": True}, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "cmem", "args": ["hook", "claude-code", "summarize"]}]}]}}))  # fmt: skip
    doctor = _run("doctor", "--settings-file", str(settings), env=_env(tmp_path, data))
    assert "FAIL  cmem is installed twice" in doctor.stdout


def test_uninstall_on_the_settings_route_removes_hooks_mcp_and_the_route(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    data = tmp_path / ".claude-mem"
    env = _env(tmp_path, data)
    assert _run("install", "--settings-file", str(settings), env=env).returncode == 0
    assert (data / "install-route").read_text().strip() == "settings"
    done = _run("uninstall", "--settings-file", str(settings), env=env)
    assert done.returncode == 0, done.stderr
    assert "cmem hooks removed from" in done.stdout and "MCP server 'cmem' removed" in done.stdout
    assert "plugin" not in done.stdout  # no plugin: nothing to say about one
    assert "hooks" not in json.loads(settings.read_text())
    assert "cmem" not in json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]
    assert not (data / "install-route").exists()


def _plugin_and_leftover_hooks(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """The plugin enabled, plus hooks and the MCP server from an earlier `cmem install`."""
    settings = tmp_path / ".claude" / "settings.json"
    data = tmp_path / ".claude-mem"
    env = _env(tmp_path, data)
    assert _run("install", "--settings-file", str(settings), env=env).returncode == 0
    written = json.loads(settings.read_text())
    settings.write_text(json.dumps({**written, "enabledPlugins": {"cmem@cmem": True}}))
    (data / "install-route").write_text("plugin\n")
    return settings, data, env


def test_uninstall_on_the_plugin_route_without_claude_says_how_and_keeps_the_route(
    tmp_path: Path,
) -> None:
    settings, data, env = _plugin_and_leftover_hooks(tmp_path)
    done = _run("uninstall", "--settings-file", str(settings), env=env)  # no `claude` on PATH
    assert done.returncode == 0, done.stderr
    # The other route's hooks and MCP server go...
    assert "cmem hooks removed from" in done.stdout
    left = json.loads(settings.read_text())
    assert "hooks" not in left and "cmem" not in json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]  # fmt: skip
    # ...the plugin stays enabled, so uninstall says how to remove it, and its route stays.
    assert (
        "the Claude Code plugin cmem@cmem is still installed: `claude` is not on PATH, so remove "
        "it with `claude plugin uninstall cmem@cmem`" in done.stdout
    )
    assert left["enabledPlugins"] == {"cmem@cmem": True}
    assert (data / "install-route").read_text().strip() == "plugin"


def test_uninstall_keep_plugin_removes_only_the_settings_route(tmp_path: Path) -> None:
    settings, data, env = _plugin_and_leftover_hooks(tmp_path)
    doctor = _run("doctor", "--settings-file", str(settings), env=env)
    assert "cmem uninstall --keep-plugin` (the plugin stays)" in doctor.stdout
    done = _run("uninstall", "--keep-plugin", "--settings-file", str(settings), env=env)
    assert done.returncode == 0, done.stderr
    assert "the Claude Code plugin cmem@cmem stays and provides cmem's hooks" in done.stdout
    assert "hooks" not in json.loads(settings.read_text())
    assert (data / "install-route").read_text().strip() == "plugin"
    doctor = _run("doctor", "--settings-file", str(settings), env=env)
    assert "ok    hooks and MCP server come from the Claude Code plugin cmem@cmem" in doctor.stdout


def test_uninstall_leaves_a_plugin_alone_when_the_settings_file_is_not_claudes(
    tmp_path: Path,
) -> None:
    # A `--settings-file` elsewhere is not the file `claude plugin uninstall` edits: even with
    # a `claude` on PATH, cmem does not run it (it would change the user's real settings).
    settings, data, env = _plugin_and_leftover_hooks(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    claude = bin_dir / "claude"
    claude.write_text('#!/bin/sh\necho ran >> "$HOME/claude-ran"\n')
    claude.chmod(0o755)
    other = tmp_path / "project-settings.json"
    other.write_text(settings.read_text())
    env = {**env, "PATH": f"{bin_dir}:{env['PATH']}"}
    done = _run("uninstall", "--settings-file", str(other), env=env)
    assert done.returncode == 0, done.stderr
    assert f"{other} is not Claude Code's user settings, so remove it with" in done.stdout
    assert not (tmp_path / "claude-ran").exists()
    assert (data / "install-route").read_text().strip() == "plugin"


def test_the_plugin_route_names_the_plugins_mcp_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from memory import config
    from memory.agents.tool_names import tool_names
    from memory.briefing.context import HOWTO, tools_named

    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(tmp_path))

    def shown() -> str:
        names = tool_names(platform="claude-code", route=config.install_route_setting({}))
        return tools_named(HOWTO + " This index: ~100t.", names)

    # The settings route: the server registered as "cmem" in ~/.claude.json.
    assert "mcp__cmem__get_observations([IDs])" in shown()
    (tmp_path / "install-route").write_text("plugin\n")  # what the plugin's hook records
    assert "mcp__plugin_cmem_cmem__get_observations([IDs])" in shown()
    assert "mcp__plugin_cmem_cmem__search(query)" in shown()
    assert "mcp__plugin_cmem_cmem__get_tool_uses([IDs])" in shown()


def test_the_plugin_files_in_the_repo_are_the_generated_ones() -> None:
    for rel, data in plugin_files().items():
        assert json.loads((REPO / rel).read_text()) == data, rel
    hooks = plugin_files()["plugin/hooks/hooks.json"]["hooks"]
    from memory.agents.install.claude_code import hook_entries

    # The same events, matchers and timeouts as `cmem install` writes.
    assert {e: [(g.get("matcher"), g["hooks"][0]["timeout"]) for g in gs] for e, gs in hooks.items()} == {
        e: [(g.get("matcher"), g["hooks"][0]["timeout"]) for g in gs] for e, gs in hook_entries(command="cmem").items()
    }  # fmt: skip


def test_the_plugin_hook_without_cmem_says_so_once_and_exits_0(tmp_path: Path) -> None:
    done = subprocess.run(
        ["sh", str(REPO / "plugin" / "bin" / "cmem-hook"), "observation"], input="{}",
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout == ""
    assert (
        done.stderr.count("\n") == 1
        and "cmem plugin: the cmem command is not installed" in done.stderr
    )


def test_the_plugin_hook_records_the_plugin_route_at_session_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = _env(tmp_path, data, path=f"{Path(CMEM).parent}:/usr/bin:/bin")
    env["CLAUDE_MEM_WORKER_PORT"] = str(free_port())
    # No worker: one spawned detached by the hook would outlive the test (`cmem stop` can run
    # before it has written its pid file).
    env["CMEM_NO_SPAWN"] = "1"
    subprocess.run(
        ["sh", str(REPO / "plugin" / "bin" / "cmem-hook"), "context"], input="{not json",
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (data / "install-route").read_text().strip() == "plugin"


@pytest.mark.slow
def test_setup_does_the_first_run_and_is_idempotent(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".gemini").mkdir()  # an agent found by its config folder is set up too
    data = tmp_path / ".claude-mem"
    env = make_worker_env(data, free_port(), HOME=str(tmp_path))
    env["PATH"] = f"{Path(CMEM).parent}:/usr/bin:/bin"
    try:
        first = _run("setup", env=env, timeout=240)
        assert first.returncode == 0, first.stdout + first.stderr
        assert "cmem started:" in first.stdout and "cmem hooks installed in" in first.stdout
        assert "no problems found" in first.stdout and re.search(
            r"Dashboard: http://127\.0\.0\.1:\d+/auth/\?token=", first.stdout
        )
        settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
        assert set(settings["hooks"]) >= {"SessionStart", "PreToolUse", "PostToolUse"}
        gemini = json.loads((tmp_path / ".gemini" / "settings.json").read_text())
        assert "== Gemini CLI" in first.stdout and "cmem" in gemini["mcpServers"]
        second = _run("setup", env=env, timeout=240)
        assert second.returncode == 0, second.stdout + second.stderr
        assert "cmem already running:" in second.stdout
        assert "cmem hooks already installed in" in second.stdout
        assert json.loads((tmp_path / ".claude" / "settings.json").read_text()) == settings
    finally:
        _run("stop", env=env)


@pytest.mark.django_db
def test_unknown_api_paths_answer_json_and_pages_are_styled(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/api/no/such/thing")
    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Not found: /api/no/such/thing"}
    page = client.get("/no-such-page/")
    assert page.status_code == 404 and b"Nothing here" in page.content
    assert b"/static/css/cmem.css" in page.content


def test_the_500_page_needs_no_database_and_api_errors_are_json(rf) -> None:  # type: ignore[no-untyped-def]
    from cmem_site.errors import server_error

    page = server_error(rf.get("/stats/"))
    assert (
        page.status_code == 500
        and b"Something broke" in page.content
        and b"cmem logs" in page.content
    )
    api = server_error(rf.get("/api/search"))
    assert api.status_code == 500 and json.loads(api.content)["detail"]
