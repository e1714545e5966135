"""`python -m tests.bench startup`: cmem's start and its hooks as a user gets them, beside claude-mem.

cmem is installed the way the README says (`uv tool install` of this checkout, into a
scratch UV_TOOL_DIR / UV_TOOL_BIN_DIR; `CMEM_BENCH_TOOL=<dir>` reuses one a previous run
made there), then `cmem install` writes Claude Code's hooks into a scratch HOME, with the
default data dir (`~/.claude-mem` of that HOME). Then, in one run:

1. **`cmem serve` to healthy**: the installed `cmem serve`, on a data dir migrated and seeded
   beforehand (so it times the start, not the migration), from spawn to the first 200 from
   `GET /api/health` on 127.0.0.1 (a raw socket probe every 5 ms). When
   `CMEM_BENCH_CLAUDE_MEM=<dir>` names a claude-mem 13.25.3 install made by the recipe in
   the spec's measured anchors (`npm install claude-mem@13.25.3 bun@1.4.5` in `<dir>`, its
   HOME `<dir>/home`), its daemon (`bun worker-service.cjs --daemon`) is started the same
   way in the same run, interleaved A B A B, and timed to its first 200 from `/api/health`
   and from `/api/readiness`: claude-mem answers health as soon as it listens and says
   `"initialized": false` until its database and search are up, which readiness waits for.
   `CMEM_BENCH_BASELINE_TOOL=<dir>` adds another `uv tool install` of cmem (its `bin/cmem`,
   an older checkout) to the same rotation, on its own copy of the data dir: before and
   after in one run.
2. **Hooks as installed**: the exact commands `cmem install` wrote into
   `~/.claude/settings.json` for PreToolUse Read (`file-context`, a Read of a file with
   history, so the gate answers) and PostToolUse (`observation`), run by fork/exec/wait with
   the worker up, interleaved with `python -c pass` and `python -I -S -c pass` of the same
   interpreter (the tool's venv), same stdin. Ratios to both.

Medians; the load average is printed with the figures (the machine is shared).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memory.management.commands import bench as hooks_bench
from tests.bench import gate as gate_bench
from tests.bench import lean as lean_bench
from tests.bench.harness import (
    REPO,
    child_env,
    free_port,
    migrated_and_seeded,
    scratch_dir,
    write_modules,
)

PROBE_EVERY_S = 0.005
START_TIMEOUT_S = 60.0
# The hooks timed, by the settings.json event (and matcher) that runs them.
HOOKS = {"file-context": ("PreToolUse", "Read"), "observation": ("PostToolUse", "*")}


def _status(port: int, path: str) -> int | None:
    """The HTTP status `GET path` gets on 127.0.0.1:`port`, or None when nothing answers."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
            head = sock.recv(64)
    except OSError:
        return None
    try:
        return int(head.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return None


@dataclass
class Server:
    """One way to start a worker: its command, environment and port, and the paths whose
    first 200 is timed from spawn."""

    name: str
    argv: list[str]
    env: dict[str, str]
    port: int
    paths: tuple[str, ...] = ("/api/health",)
    cwd: str | None = None

    def start_times(self) -> dict[str, float]:
        """Spawn, time each path's first 200 (in order), stop; seconds by path."""
        started = time.perf_counter()
        proc = subprocess.Popen(
            self.argv, env=self.env, cwd=self.cwd, start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        times: dict[str, float] = {}
        try:
            deadline = started + START_TIMEOUT_S
            for path in self.paths:
                while _status(self.port, path) != 200:
                    if proc.poll() is not None or time.perf_counter() > deadline:
                        raise RuntimeError(
                            f"{self.name} did not answer {path} (exit {proc.poll()})"
                        )
                    time.sleep(PROBE_EVERY_S)
                times[path] = time.perf_counter() - started
        finally:
            _stop(proc)
            _wait_port_free(self.port)
        return times


def _stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _wait_port_free(port: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _status(port, "/api/health") is not None:
        time.sleep(0.05)


def _uv() -> str:
    found = REPO / ".tools" / "uv" / "bin" / "uv"
    if found.exists():
        return str(found)
    which = shutil.which("uv")
    if which is None:
        raise RuntimeError("bench startup installs cmem with uv: run `make setup` first")
    return which


def installed_cmem(tool: Path) -> Path:
    """`cmem` as `uv tool install` of this checkout puts it in `tool/bin` (installed there
    unless a previous run left it)."""
    cmem = tool / "bin" / "cmem"
    if not cmem.exists():
        env = dict(os.environ, UV_TOOL_DIR=str(tool / "dir"), UV_TOOL_BIN_DIR=str(tool / "bin"))
        subprocess.run(
            # --reinstall: build this tree, not a cached wheel of the same version number
            [_uv(), "tool", "install", "--force", "--reinstall", "--python", f"{sys.version_info[0]}.{sys.version_info[1]}", str(REPO)],
            env=env, check=True, capture_output=True, timeout=900,
        )  # fmt: skip
    return cmem


def installed_hooks(settings_file: Path) -> dict[str, list[str]]:
    """The argv of each timed hook as `cmem install` wrote it into Claude Code's settings."""
    settings = json.loads(settings_file.read_text())
    found: dict[str, list[str]] = {}
    for name, (event, matcher) in HOOKS.items():
        for group in settings["hooks"].get(event, []):
            if group.get("matcher", "*") != matcher:
                continue
            for hook in group["hooks"]:
                args = [str(a) for a in hook.get("args", [])]
                if name in args:
                    found[name] = [str(hook["command"]), *args]
    missing = set(HOOKS) - set(found)
    if missing:
        raise RuntimeError(f"{settings_file} has no hook for {sorted(missing)}")
    return found


def claude_mem_server(root: Path, port: int) -> Server:
    """claude-mem's daemon as the recipe runs it (its own HOME under `root`, no network)."""
    plugin = root / "node_modules" / "claude-mem" / "plugin"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_MEM_", "CMEM_"))}
    env.pop("NODE_EXTRA_CA_CERTS", None)  # adds ~110 ms to every node start where it is set
    env.update(
        HOME=str(root / "home"),
        PATH=f"{root / 'node_modules' / '.bin'}:{env.get('PATH', '')}",
        CLAUDE_PLUGIN_ROOT=str(plugin),
        CLAUDE_MEM_WORKER_PORT=str(port),
        CLAUDE_MEM_WORKER_HOST="127.0.0.1",
        CLAUDE_MEM_CHROMA_ENABLED="false",
        CLAUDE_MEM_TELEMETRY="0",
        DO_NOT_TRACK="1",
        ANTHROPIC_BASE_URL="http://127.0.0.1:9",
    )
    bun = root / "node_modules" / ".bin" / "bun"
    argv = [str(bun), str(plugin / "scripts" / "worker-service.cjs"), "--daemon"]
    return Server("claude-mem", argv, env, port, ("/api/health", "/api/readiness"), str(root))


def _ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def serve_rows(servers: list[Server], runs: int) -> dict[str, dict[str, float]]:
    """Median seconds to each server's paths, A B A B after one warm-up start of each."""
    for server in servers:
        server.start_times()
    times: dict[str, dict[str, list[float]]] = {s.name: {p: [] for p in s.paths} for s in servers}
    for _ in range(runs):
        for server in servers:
            for path, seconds in server.start_times().items():
                times[server.name][path].append(seconds)
    return {
        name: {path: statistics.median(values) for path, values in by_path.items()}
        for name, by_path in times.items()
    }


def hook_rows(
    hooks: dict[str, list[str]], python: str, env: dict[str, str], project: Path, runs: int
) -> dict[str, float]:
    """Median ms of each installed hook and of the bare interpreter both ways, interleaved."""
    commands = {
        "python -c pass": [python, "-c", "pass"],
        "python -I -S -c pass": [python, "-I", "-S", "-c", "pass"],
        **hooks,
    }
    for n in range(3):  # bytecode caches and the worker's first requests
        for name, cmd in commands.items():
            hooks_bench._time(cmd, lean_bench._hook_payload(_event(name), n, project), env)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for n in range(runs):
        for name, cmd in commands.items():
            times[name].append(
                hooks_bench._time(cmd, lean_bench._hook_payload(_event(name), n, project), env)
            )
    return {name: _ms(values) for name, values in times.items()}


def _event(name: str) -> str:
    return name if name in HOOKS else "file-context"


def run(*, out: Any, options: dict[str, Any]) -> None:
    quick = options.get("quick")
    runs = options.get("runs") or (5 if quick else 15)
    size = options.get("size") or (1_000 if quick else 10_000)
    reuse = os.environ.get("CMEM_BENCH_TOOL")
    claude_mem = os.environ.get("CMEM_BENCH_CLAUDE_MEM")
    with scratch_dir("cmem-bench-startup-") as work:
        tool = Path(reuse) if reuse else work / "tool"
        out.write(f"installing cmem with `uv tool install` into {tool}…")
        cmem = installed_cmem(tool)
        home, project = work / "home", work / "bench-project"
        home.mkdir()
        data = home / ".claude-mem"
        port = free_port()
        env = child_env(
            data, HOME=str(home), CLAUDE_MEM_WORKER_PORT=str(port),
            CLAUDE_MEM_WORKER_HOST="127.0.0.1", CLAUDE_MEM_COMPRESSOR="offline",
        )  # fmt: skip
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # a real install keeps its bytecode caches
        # What a user's agent has: no CLAUDE_MEM_DATA_DIR (the default one), the worker's port.
        hook_env = {k: v for k, v in env.items() if k != "CLAUDE_MEM_DATA_DIR"}
        subprocess.run([str(cmem), "install", "--no-mcp"], env=hook_env, check=True, capture_output=True, timeout=120)  # fmt: skip
        hooks = installed_hooks(home / ".claude" / "settings.json")
        out.write(f"seeding {size:,} observations over {gate_bench.FILES:,} files…")
        write_modules(project, gate_bench.FILES, gate_bench._rel)
        migrated_and_seeded(
            "tests.bench.gate",
            dict(env, DJANGO_SETTINGS_MODULE="cmem_site.settings"),
            size,
            project,
        )
        servers = [Server("cmem", [str(cmem), "serve"], env, port)]
        baseline = os.environ.get("CMEM_BENCH_BASELINE_TOOL")
        if baseline:
            # Its own copy of the data dir: one cmem's stamp must not decide the other's start.
            shutil.copytree(data, work / "baseline-data")
            base_env = dict(env, CLAUDE_MEM_DATA_DIR=str(work / "baseline-data"))
            base_cmem = str(Path(baseline) / "bin" / "cmem")
            # One start to migrate or stamp (its schema may be older), then the rotation.
            Server("baseline", [base_cmem, "serve"], base_env, port).start_times()
            servers.append(Server("baseline", [base_cmem, "serve"], base_env, port))
        if claude_mem:
            servers.append(claude_mem_server(Path(claude_mem), free_port()))
        started_at = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        load_before = os.getloadavg()
        serve = serve_rows(servers, runs)
        worker = subprocess.Popen(
            [str(cmem), "serve"], env=env, start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            while _status(port, "/api/health") != 200:
                time.sleep(PROBE_EVERY_S)
            python = hooks["file-context"][0]
            hook_ms = hook_rows(hooks, python, hook_env, project, runs * 10)
        finally:
            _stop(worker)
    load_after = os.getloadavg()
    out.write(
        f"{started_at}; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after "
        f"(2 cores shared); medians; {size:,} observations"
    )
    out.write(f"`cmem serve` to healthy, {runs} starts each, interleaved:")
    cmem_s = serve["cmem"]["/api/health"]
    out.write(f"  cmem serve -> /api/health 200: {cmem_s:.3f} s")
    if "baseline" in serve:
        before = serve["baseline"]["/api/health"]
        out.write(
            f"  baseline cmem ({os.environ.get('CMEM_BENCH_BASELINE_TOOL')}) -> /api/health 200: "
            f"{before:.3f} s (this one takes {cmem_s / before:.2f} of its time)"
        )
    if "claude-mem" in serve:
        theirs = serve["claude-mem"]
        out.write(
            f"  claude-mem --daemon -> /api/health 200: {theirs['/api/health']:.3f} s "
            f"(ratio claude-mem / cmem {theirs['/api/health'] / cmem_s:.2f}); "
            f"-> /api/readiness 200: {theirs['/api/readiness']:.3f} s "
            f"(ratio {theirs['/api/readiness'] / cmem_s:.2f})"
        )
    bare, isolated = hook_ms["python -c pass"], hook_ms["python -I -S -c pass"]
    out.write(f"hooks as `cmem install` wrote them ({python}), {runs * 10} runs each, interleaved:")
    out.write(f"  python -c pass {bare:.1f} ms; python -I -S -c pass {isolated:.1f} ms")
    for name in HOOKS:
        out.write(
            f"  {name}: {hook_ms[name]:.1f} ms = {hook_ms[name] / bare:.2f}x `python -c pass`, "
            f"{hook_ms[name] / isolated:.2f}x `python -I -S -c pass`"
        )
