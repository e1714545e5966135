"""What the Gemini CLI, Copilot CLI and OpenCode end-to-end tests share: a scratch HOME with
cmem installed for that agent by `cmem install --<agent>`, a real `cmem serve`, a project
with one file worth gating, and the two sessions every agent runs:
1. the model reads handlers.py: an observation of it is stored and compressed;
2. the model reads it again in a new session: the session's first request carries the
   index, and the read is refused with the file's timeline (or advised, where the agent
   only allows advice)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.harness import installed_cli, query, wait_for
from tests.support import CMEM, REPO, LiveWorker, free_port, make_worker_env
from tests.support.e2e_record import e2e_record

NODE_BIN = REPO / ".e2e-node" / "node_modules" / ".bin"
INDEX = "recent context"  # the SessionStart index's header line
TARGET = "".join(
    f"def handler_{i}(request):\n    return {{'handler': {i}}}\n\n\n" for i in range(60)
)


def pinned(name: str) -> str:
    return (Path(__file__).with_name(f"{name}-version.txt")).read_text().strip()


def agent_binary(binary: str, *, env_var: str, name: str, package: str) -> Path:
    """The pinned CLI from `.e2e-node/` (installed by `.ci/run`), or `env_var`. CI exports
    CMEM_E2E_REQUIRED=1 so a missing CLI fails there; elsewhere the tests skip."""
    explicit = os.environ.get(env_var)
    return installed_cli(
        [Path(explicit) if explicit else None, NODE_BIN / binary], name=name, package=package
    )


@dataclass
class World:
    worker: LiveWorker
    home: Path
    project: Path
    env: dict[str, str]
    binary: Path
    install_out: str = ""
    runs: dict[str, subprocess.CompletedProcess[bytes]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def run(
        self, marker: str, args: list[str], *, timeout: float = 120
    ) -> subprocess.CompletedProcess[bytes]:
        started = time.monotonic()
        proc = subprocess.run(
            [str(self.binary), *args], cwd=self.project, env=self.env,
            stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout,
        )  # fmt: skip
        self.seconds[marker] = time.monotonic() - started
        self.runs[marker] = proc
        return proc

    def observations_of_target(self) -> list[object]:
        return query(
            self.worker,
            "SELECT o.id FROM memory_observation o JOIN memory_observationfile f "
            "ON f.observation_id = o.id WHERE f.path = 'handlers.py'",
        )

    def wait_compressed(self) -> list[object]:
        return wait_for(self.observations_of_target, timeout=45)


def agent_env(
    *, home: Path, worker: LiveWorker, binary: Path, env: dict[str, str]
) -> dict[str, str]:
    """A clean environment for an agent CLI whose hooks reach `worker`: nothing of the
    developer's HOME, keys or cmem settings leaks in; `env` is the agent's own."""
    path = os.pathsep.join(
        [str(Path(CMEM).parent), str(binary.parent), "/usr/local/bin", "/usr/bin", "/bin"]
    )
    return {
        "PATH": path,
        "HOME": str(home),
        "LANG": "C.UTF-8",
        # Nothing leaves this machine: a CLI that tries anyway meets a closed port.
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
        "CLAUDE_MEM_DATA_DIR": str(worker.data_dir),
        "CLAUDE_MEM_WORKER_HOST": "127.0.0.1",
        "CLAUDE_MEM_WORKER_PORT": str(worker.port),
        **env,
    }


def install_agent(agent: str, *, env: dict[str, str], cwd: Path) -> str:
    """`cmem install --<agent>` with `env` (HOME is the scratch one); returns what it printed."""
    installed = subprocess.run(
        [CMEM, "install", f"--{agent}"], env=env, cwd=cwd, capture_output=True, timeout=60
    )
    assert installed.returncode == 0, installed.stderr.decode()[-2000:]
    return installed.stdout.decode()


@contextmanager
def agent_world(
    root: Path,
    *,
    agent: str,
    binary: Path,
    env: dict[str, str],
    files: dict[str, str] | None = None,
    worker_extra: dict[str, str] | None = None,
) -> Iterator[World]:
    """Worker up, `cmem install --<agent>` run with HOME=root/home; env is the agent's own,
    `files` (path under HOME -> text) the user's config as it was before the install."""
    home, project, data = root / "home", root / f"{agent}-shop", root / "cmem-data"
    home.mkdir()
    for relative, text in (files or {}).items():
        (home / relative).parent.mkdir(parents=True, exist_ok=True)
        (home / relative).write_text(text)
    project.mkdir()
    data.mkdir(mode=0o700)
    (project / "handlers.py").write_text(TARGET)
    port = free_port()
    worker_env = make_worker_env(
        data, port, HOME=str(home), CLAUDE_MEM_COMPRESSOR="offline", **(worker_extra or {})
    )
    worker = LiveWorker(data_dir=data, port=port, env=worker_env)
    worker.start()
    try:
        full_env = agent_env(home=home, worker=worker, binary=binary, env=env)
        installed = install_agent(agent, env={**worker_env, **full_env}, cwd=project)
        yield World(worker, home, project, full_env, binary, installed)
    finally:
        worker.stop()
        # What this agent's real CLI sent, kept for `python -m tests.bench offline`.
        cli = {
            "gemini": "gemini-cli", "copilot": "copilot-cli", "qwen": "qwen-code",
            "continue": "continue-cli",
        }.get(agent, agent)  # fmt: skip
        version = pinned(cli)
        e2e_record(
            data_dir=data, scratch=root, name=f"{cli}-{version}", agent=agent, version=version
        )


def summary_queued(world: World) -> bool:
    """Whether the session's stop event queued its summary (waits up to 30 s)."""
    return bool(
        wait_for(
            lambda: query(world.worker, "SELECT 1 FROM memory_event WHERE kind = 'summary'"),
            timeout=30,
        )
    )


def stored_read(world: World, *, platform: str, project: str) -> dict[str, Any]:
    """Session 1 as every agent's e2e stores it: one session of `platform` in `project`, one
    tool use, a Read of handlers.py marked as a read of it; that tool use's payload."""
    sessions = query(world.worker, "SELECT platform, project FROM memory_session")
    assert [(s["platform"], s["project"]) for s in sessions] == [(platform, project)]
    events = query(
        world.worker, "SELECT tool_name, payload FROM memory_event WHERE kind = 'observation'"
    )
    assert [e["tool_name"] for e in events] == ["Read"]
    payload: dict[str, Any] = json.loads(events[0]["payload"])
    assert [(f["path"], f["role"]) for f in payload["cmem_files"]] == [("handlers.py", "read")]
    return payload
