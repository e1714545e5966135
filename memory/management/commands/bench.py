"""`cmem bench hooks`: what a hook costs the agent on this machine, against the bare interpreter.
`cmem bench truth`: whether every surface shows the current memory after corrections
(memory/management/benches/truth.py).

Starts its own worker (`cmem serve` on a free port, in a temporary data dir: never your
memory), then runs, interleaved so machine noise hits all three alike: `python -c pass`,
`cmem hook claude-code observation` (a realistic PostToolUse payload), `cmem hook
claude-code file-context`, and a PostToolUseFailure that failure recall answers with a
recorded fix. Whole-process wall times, medians, printed as ratios to the bare
interpreter. Then the worker's own ingest time per event: POSTs of fresh tool uses over one
keep-alive connection.

The other benchmarks are for developers and live in the checkout (tests/bench/: `make bench
NAME=...`); they import `run` and `_observation` from here. `cmem bench scale` runs the
checkout's (tests/bench/scale.py) when cmem is installed from one, and says so otherwise.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.management.benches import truth
from memory.management.benches.truth import SCENARIOS
from memory.runtime.detach import detached
from memory.runtime.processes import KILL, TERM, signal_group

ENTRY = str(Path(__file__).resolve().parents[2] / "hookclient" / "entry.py")

OBSERVATION = {
    "session_id": "bench-session",
    "transcript_path": "/home/dev/.claude/projects/-home-dev-projects-demo/bench.jsonl",
    "cwd": "/home/dev/projects/demo",
    "prompt_id": "bench-prompt",
    "permission_mode": "default",
    "hook_event_name": "PostToolUse",
    "tool_name": "Bash",
    "tool_input": {
        "command": "pytest tests/test_models.py -q",
        "description": "Run the model tests",
    },
    "tool_response": {
        "stdout": "".join(f"tests/test_models.py::test_case_{i} PASSED\n" for i in range(40))
        + "40 passed in 0.41s",
        "stderr": "",
        "interrupted": False,
        "isImage": False,
        "noOutputExpected": False,
    },
    "tool_use_id": "toolu_bench",
    "duration_ms": 412,
}


# What Claude Code 2.1.332 sends when a Bash command exits non-zero
# (tests/fixtures/claude-code-2.1.332/PostToolUseFailure.bash.json): the synchronous hook
# that failure recall answers (memory/briefing/failure_recall.py).
FAILURE = {
    "session_id": "bench-failure",
    "transcript_path": "/home/dev/.claude/projects/-home-dev-projects-demo/bench.jsonl",
    "cwd": "/home/dev/projects/demo",
    "prompt_id": "bench-prompt",
    "permission_mode": "default",
    "hook_event_name": "PostToolUseFailure",
    "tool_name": "Bash",
    "tool_input": {"command": "python3 -c 'import stripe_sdk'", "description": "Import"},
    "tool_use_id": "toolu_bench_failure",
    "error": 'Exit code 1\nTraceback (most recent call last):\n  File "<string>", line 1, '
    "in <module>\nModuleNotFoundError: No module named 'stripe_sdk'",
    "is_interrupt": False,
    "duration_ms": 70,
}
# The recorded fix the bench's failures recall (`cmem remember`, in the payload's project).
FAILURE_FIX = (
    "Fixed ModuleNotFoundError for stripe_sdk",
    "python3 -c 'import stripe_sdk' failed with ModuleNotFoundError: No module named "
    "'stripe_sdk'; fixed by adding vendor/ to PYTHONPATH",
)


def _failure(n: int) -> bytes:
    """A failure in a session of its own each time: every run looks the fix up, renders it
    and books it (the once-per-session shortcut would flatter the figure)."""
    return json.dumps(
        {
            **FAILURE,
            "session_id": f"bench-failure-{n}-{time.time_ns()}",
            "tool_use_id": f"toolu_f_{n}",
        }
    ).encode()


# What Claude Code 2.1.332 sends before a Read (tests/fixtures/claude-code-2.1.332/PreToolUse.json).
PRE_TOOL_USE = {
    "session_id": "571a3c56-e5f8-4a93-b71d-946a0601887f",
    "transcript_path": "/home/dev/.claude/projects/-home-dev-projects-demo/571a3c56-e5f8-4a93-b71d-946a0601887f.jsonl",
    "cwd": "/home/dev/projects/demo",
    "prompt_id": "a9a0d306-7bcc-4112-91bb-fa84d96df08f",
    "permission_mode": "default",
    "effort": {"level": "medium"},
    "hook_event_name": "PreToolUse",
    "tool_name": "Read",
    "tool_input": {"file_path": "/home/dev/projects/demo/target.txt"},
    "tool_use_id": "toolu_fake_0002",
}


class Command(BaseCommand):
    help = (
        "hooks: what a hook costs on this machine, against `python -c pass`. truth: whether"
        " the index, the gate, prompt recall and search show the current memory after"
        " corrections and consolidation (scripted histories). scale: cost at 10k to 1M rows"
        " (a developer benchmark: needs a checkout)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("name", choices=["hooks", "truth", "scale", "cli"])
        parser.add_argument("--quick", action="store_true", help="Fewer runs, for a smoke run.")
        parser.add_argument("--runs", type=int, default=None, help="Runs of each hook.")
        parser.add_argument(
            "--scenarios",
            type=Path,
            default=None,
            help="truth: a folder of scenario .toml files (default: the shipped ones).",
        )
        parser.add_argument("--inner", type=Path, default=None, help=argparse.SUPPRESS)
        parser.add_argument("--sizes", default=None, help="scale: store sizes, e.g. 10000,100000.")
        parser.add_argument(
            "--backend",
            choices=["sqlite", "postgresql", "both"],
            default=None,
            help="scale: which database (default both).",
        )
        parser.add_argument("--keep", default=None, help="scale: keep seeded stores in this dir.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["name"] in {"scale", "cli"}:
            checkout_bench(options["name"], options)
            return
        self.stdout.write(f"== bench {options['name']} ==")
        if options["name"] == "truth" and options["inner"]:
            # The child: Django is set up on the throwaway data dir it was started with.
            from memory.management.benches.truth_run import truth_run

            truth_run(options["scenarios"] or SCENARIOS, options["inner"])
            return
        if options["name"] == "truth":
            try:
                held = truth.run(out=self.stdout, folder=options["scenarios"] or SCENARIOS)
            except truth.ScenarioError as exc:
                raise CommandError(str(exc)) from exc
            if not held:
                raise CommandError("some truth checks failed (above)")
            return
        run(out=self.stdout, options=options)


def checkout() -> Path:
    """The folder this cmem runs from: a checkout when cmem was installed from one."""
    return Path(__file__).resolve().parents[3]


def checkout_bench(name: str, options: dict[str, Any]) -> None:
    """Run a developer benchmark of the checkout (`python -m tests.bench NAME ...`) there."""
    root = checkout()
    if not (root / "tests" / "bench" / f"{name}.py").is_file():
        raise CommandError(
            f"bench {name} is a developer benchmark: it needs a checkout of cmem "
            f"(run `make bench NAME={name}` in one)"
        )
    command = [sys.executable, "-m", "tests.bench", name]
    for flag in ("sizes", "backend", "keep", "runs"):
        if options.get(flag) is not None:
            command += [f"--{flag}", str(options[flag])]
    if options.get("quick"):
        command.append("--quick")
    if subprocess.run(command, cwd=root, check=False).returncode:
        raise CommandError(f"bench {name} failed (above)")


def child_env(data_dir: Path | str, **extra: str) -> dict[str, str]:
    """os.environ without cmem's or Anthropic's settings, pointed at `data_dir`, plus `extra`."""
    prefixes = ("CLAUDE_MEM_", "ANTHROPIC_", "CMEM_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env.update(CLAUDE_MEM_DATA_DIR=str(data_dir), **extra)
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def owner_headers(data_dir: Path | str) -> dict[str, str]:
    """The bearer header a TCP client of the benchmark's own worker sends (worker.secret)."""
    try:
        secret = (Path(data_dir) / "worker.secret").read_text().strip()
    except OSError:
        return {}
    return {"Authorization": f"Bearer {secret}"}


def wait_health(url: str, timeout: float) -> bool:
    """True once `url`/api/health answers 200, False when `timeout` seconds pass first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/api/health", timeout=0.5) as resp:
                if resp.status == 200:
                    return True
        except OSError:
            time.sleep(0.1)
    return False


def percentile(values: list[float], q: float) -> float:
    """The nearest-rank `q` quantile (0 <= q <= 1) of `values`, in their own unit."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _cmem() -> str:
    return str(Path(sys.executable).with_name("cmem"))


def _time(cmd: list[str], payload: bytes, env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        cmd,
        input=payload,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - started


def _observation(n: int) -> bytes:
    return json.dumps({**OBSERVATION, "tool_use_id": f"toolu_bench_{n}_{time.time_ns()}"}).encode()


def _ingest_times(
    port: int, count: int, *, pause: float = 0.0, start: int = 100000, auth: dict[str, str]
) -> list[float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    times = []
    try:
        for n in range(start, start + count):
            if pause:
                time.sleep(pause)
            body = _observation(n)
            started = time.perf_counter()
            conn.request(
                "POST",
                "/api/hooks/claude-code/observation",
                body=body,
                headers={"Content-Type": "application/json", **auth},
            )
            resp = conn.getresponse()
            resp.read()
            times.append(time.perf_counter() - started)
            if resp.status != 200:
                raise RuntimeError(f"worker answered {resp.status}")
    finally:
        conn.close()
    return times


def run(*, out: Any, options: dict[str, Any]) -> None:
    runs = options.get("runs") or (10 if options.get("quick") else 30)
    ingest_count = 50 if options.get("quick") else 200
    with tempfile.TemporaryDirectory(prefix="cmem-bench-hooks-") as tmp:
        data = Path(tmp) / "data"
        data.mkdir(mode=0o700)
        port = free_port()
        env = child_env(data, CLAUDE_MEM_WORKER_PORT=str(port), CLAUDE_MEM_WORKER_HOST="127.0.0.1")
        # Real installs have bytecode caches; a dev shell with PYTHONDONTWRITEBYTECODE would
        # make every hook recompile its modules and measure the compiler instead.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        log = open(data / "serve.out", "ab")  # noqa: SIM115 - closed below, after the worker stops
        worker = subprocess.Popen(
            [_cmem(), "serve"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            **detached(),
        )
        try:
            if (
                not wait_health(f"http://127.0.0.1:{port}", 60)
                or not (data / "worker.port").exists()
            ):
                time.sleep(0.5)
            if not (data / "worker.port").exists():
                raise RuntimeError(
                    f"bench worker did not start: {(data / 'serve.out').read_text()[-1000:]}"
                )
            _report(out, runs=runs, ingest_count=ingest_count, env=env, port=port)
        finally:
            signal_group(worker.pid, TERM)
            try:
                worker.wait(timeout=20)
            except subprocess.TimeoutExpired:
                signal_group(worker.pid, KILL)
            log.close()


def _report(out: Any, *, runs: int, ingest_count: int, env: dict[str, str], port: int) -> None:
    cmem = _cmem()
    pre_tool_use = json.dumps(PRE_TOOL_USE).encode()
    commands = {
        "python -c pass": ([sys.executable, "-c", "pass"], lambda n: b""),
        "cmem hook claude-code observation": (
            [cmem, "hook", "claude-code", "observation"],
            _observation,
        ),
        "cmem hook claude-code file-context": (
            [cmem, "hook", "claude-code", "file-context"],
            lambda n: pre_tool_use,
        ),
        # The stdlib entry with -I -S: no site, no .pth files (memory/hookclient/entry.py).
        "python -I -S hookclient/entry.py observation": (
            [sys.executable, "-I", "-S", ENTRY, "hook", "claude-code", "observation"],
            _observation,
        ),
        "python -I -S hookclient/entry.py file-context": (
            [sys.executable, "-I", "-S", ENTRY, "hook", "claude-code", "file-context"],
            lambda n: pre_tool_use,
        ),
        # PostToolUseFailure, synchronous: the recorded fix is found, shown and ledgered.
        "python -I -S hookclient/entry.py failure": (
            [sys.executable, "-I", "-S", ENTRY, "hook", "claude-code", "observation"],
            _failure,
        ),
    }
    title, detail = FAILURE_FIX
    subprocess.run(
        [cmem, "remember", title, detail, "--kind", "bugfix", "--project", "demo"],
        env=env, capture_output=True, check=True, timeout=60,
    )  # fmt: skip
    recalled = subprocess.run(
        [cmem, "hook", "claude-code", "observation"],
        input=_failure(-2), env=env, capture_output=True, timeout=60,
    )  # fmt: skip
    if b"stripe_sdk" not in recalled.stdout:
        raise RuntimeError(f"the failure hook recalled nothing: {recalled.stdout[:500]!r}")
    for cmd, payload in commands.values():  # warm-up: bytecode caches, the worker's first request
        _time(cmd, payload(-1), env)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for n in range(runs):
        for name, (cmd, payload) in commands.items():
            times[name].append(_time(cmd, payload(n), env))
    base = statistics.median(times["python -c pass"])
    out.write(f"whole-process wall time, median of {runs} interleaved runs each:")
    for name, values in times.items():
        median = statistics.median(values)
        out.write(f"  {name:<42} {median * 1000:7.1f} ms   {median / base:5.2f}x")
    # Paced like a busy agent (a tool call every 50 ms), and as a burst where the consumer's
    # compression of earlier events competes for the CPU and the SQLite write lock.
    for label, pause, start in (
        ("paced, one every 50 ms", 0.05, 100000),
        ("burst, back to back", 0.0, 200000),
    ):
        ingest = _ingest_times(
            port,
            ingest_count,
            pause=pause,
            start=start,
            auth=owner_headers(env["CLAUDE_MEM_DATA_DIR"]),
        )
        out.write(
            f"worker ingest per observation ({label}; HTTP POST on a keep-alive connection, {ingest_count} events): "
            f"p50 {percentile(ingest, 0.50) * 1000:.2f} ms, p99 {percentile(ingest, 0.99) * 1000:.2f} ms"
        )
