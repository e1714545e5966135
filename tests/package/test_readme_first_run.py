"""The README's newcomer path, followed literally: the shell lines of its "Install and the
first ten minutes" section, run as written, in a home of their own.

The install line runs in the checkout (the README says "in the checkout"); every later line
runs from an empty folder outside it, with `PATH` reaching only the `cmem` that install put
on it. Only the environment is arranged (a temporary HOME, uv's tool folders, a free port):
no command is changed, so a README edit that breaks the first ten minutes fails here.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.paths import REPO, uv_path
from tests.support.worker import free_port

pytestmark = [pytest.mark.package, pytest.mark.slow, pytest.mark.timeout(900)]

SECTION = "## Install and the first ten minutes"


def readme_commands() -> list[str]:
    """Every command line of the section's ```sh blocks, comments and blank lines dropped."""
    text = (REPO / "README.md").read_text()
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    lines: list[str] = []
    for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S):
        for line in block.splitlines():
            command = re.split(r"\s+#", line, maxsplit=1)[0].strip()
            if command and not command.startswith("#"):
                lines.append(command)
    return lines


@pytest.fixture
def newcomer(tmp_path: Path) -> Iterator[dict[str, str]]:
    home = tmp_path / "home"
    # A newcomer who uses Claude Code has its config folder; `cmem setup` installs there.
    (home / ".claude").mkdir(parents=True)
    bin_dir = tmp_path / "bin"
    # The machine's own environment (its certificates and proxies reach the package index),
    # less what would point cmem or Python somewhere else than the README's defaults.
    inherited = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("CLAUDE_MEM_", "CMEM_", "DJANGO_", "PYTHON", "VIRTUAL_ENV", "XDG_"))
    }
    env = {
        **inherited,
        "HOME": str(home),
        "PATH": os.pathsep.join([str(bin_dir), str(Path(uv_path()).parent), "/usr/bin", "/bin"]),
        "UV_TOOL_DIR": str(tmp_path / "tools"),
        "UV_TOOL_BIN_DIR": str(bin_dir),
        "UV_PYTHON": sys.executable,
        "UV_PYTHON_DOWNLOADS": "never",
        # The shared cache keeps the suite's time down; it changes nothing that is installed.
        "UV_CACHE_DIR": os.environ.get("UV_CACHE_DIR", str(Path.home() / ".cache" / "uv")),
        "CLAUDE_MEM_WORKER_PORT": str(free_port()),
        "BROWSER": "true",  # `cmem open` must not wait for a browser
        "PYTEST_CMEM_RUN": os.environ.get("PYTEST_CMEM_RUN", ""),  # the leftover check finds it
    }
    yield env
    cmem = bin_dir / "cmem"
    if cmem.exists():
        subprocess.run([str(cmem), "stop"], env=env, cwd=tmp_path, capture_output=True, timeout=120)


def test_the_readme_first_ten_minutes_work_as_written(
    newcomer: dict[str, str], tmp_path: Path
) -> None:
    commands = readme_commands()
    assert commands[0].startswith("uv tool install "), commands
    assert {"cmem setup", "cmem demo", "cmem status"} <= set(commands), commands
    outside = tmp_path / "somewhere"
    outside.mkdir()
    outputs: dict[str, str] = {}
    for command in commands:
        cwd = REPO if command.startswith("uv tool install") else outside
        done = subprocess.run(
            shlex.split(command), env=newcomer, cwd=cwd, capture_output=True, text=True,
            timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, f"`{command}` exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"  # fmt: skip
        outputs[command] = done.stdout + done.stderr
    # The cmem that ran is the one the README's install made, not the checkout's.
    assert shutil.which("cmem", path=newcomer["PATH"]) == str(tmp_path / "bin" / "cmem")
    assert "Dashboard" in outputs["cmem setup"] or "dashboard" in outputs["cmem setup"]
    assert "acme-shop" in outputs["cmem demo"]
    search = next(out for command, out in outputs.items() if command.startswith("cmem search"))
    assert re.search(r"#\w*\d", search), search
    assert "running" in outputs["cmem status"].lower()
    # `cmem setup` installed the hooks into Claude Code's settings, pointing at that install.
    hooks = (Path(newcomer["HOME"]) / ".claude" / "settings.json").read_text()
    assert '"claude-code"' in hooks and str(tmp_path / "tools") in hooks
