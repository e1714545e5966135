"""What the hot lane (memory/api/hot_lane.py) saves, end to end through the installed hook.

Two real workers (`cmem serve`), each on its own temporary data dir and free port, the same
seeded project in both: one with the hot lane (the default), one with `CMEM_HOT_LANE=0`
(every request through Django's handler). Then, in rounds, every hook event runs the exact
command line `cmem install` writes into Claude Code's settings
(memory/agents/install/claude_code.py `hook_entry_argv`: `python -I -S -c "...run()" hook
claude-code <event>`), fed a payload made from the recorded Claude Code fixtures, once
against each worker back to back (the order flips every round), with the bare interpreter
`python -I -S -c pass` beside them as the floor. Each is one whole process, its wall time
from spawn to exit, run in sequence. The machine is shared, so the two modes are
interleaved call by call and the report gives medians, the median of the paired
differences, a 95% bootstrap interval of the saving's share, and each round's saving.

Wall time on a loaded machine swings by more than the lane's effect, so the CPU each call
costs is counted too, which load hardly moves: the hook process's own (getrusage of the
waited child) and the serving process's (the sum of its threads' run time in
/proc/<pid>/task/*/schedstat, read before and after the call; the consumer's threads are
in it too, doing the same work in both workers). Last, the worker's answer alone: the same
requests over one keep-alive connection to the owner's Unix socket, as the hook client
sends them but without a process to start.

    .venv/bin/python -m tests.bench.hot_lane [--runs 240] [--rounds 6] [--budget 150]

Writes a Markdown table (docs/benchmarks/hot-lane.md quotes it) to stdout.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a file: the checkout's `memory` package
    sys.path.insert(0, str(ROOT))

from memory.agents.install.claude_code import hook_entry_argv  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "claude-code-2.1.332"
FILES = 20  # project files the seed edits, so the Read gate has memory to show
FILE_LINE = "value = compute(value)  # a line of padding\n"
# (row label, the Claude Code event, cmem's event as `cmem install` maps it)
EVENTS = (
    ("PostToolUse", "observation"),
    ("PreToolUse (Read gate)", "file-context"),
    ("UserPromptSubmit", "session-init"),
    ("SessionStart", "context"),
)
MODES = ("on", "off")
CMEM = str(Path(sys.executable).with_name("cmem"))


def _fixture(name: str) -> dict[str, Any]:
    return dict(json.loads((FIXTURES / name).read_text()))


def payload_makers(project: Path) -> dict[str, Callable[[int], bytes]]:
    """cmem event -> run number -> the hook's stdin, each from its recorded fixture."""
    post, pre = _fixture("PostToolUse.json"), _fixture("PreToolUse.json")
    prompt, start = _fixture("UserPromptSubmit.json"), _fixture("SessionStart.json")
    cwd = str(project)

    def observation(n: int) -> bytes:
        return json.dumps({**post, "cwd": cwd, "session_id": "bench-session", "tool_use_id": f"toolu_bench_{n}"}).encode()  # fmt: skip

    def file_context(n: int) -> bytes:
        # A new session each time: the gate's answer for a first read of a remembered file.
        target = str(project / _rel(n % FILES))
        return json.dumps({**pre, "cwd": cwd, "session_id": f"bench-gate-{n}", "tool_input": {"file_path": target}, "tool_use_id": f"toolu_gate_{n}"}).encode()  # fmt: skip

    def session_init(n: int) -> bytes:
        return json.dumps({**prompt, "cwd": cwd, "session_id": "bench-session", "prompt": f"{prompt['prompt']} ({n})"}).encode()  # fmt: skip

    def context(n: int) -> bytes:
        return json.dumps({**start, "cwd": cwd, "session_id": f"bench-start-{n}"}).encode()

    return {
        "observation": observation,
        "file-context": file_context,
        "session-init": session_init,
        "context": context,
    }


def _rel(i: int) -> str:
    return f"src/module_{i}.py"


def make_project(project: Path) -> None:
    for i in range(FILES):
        path = project / _rel(i)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# module {i}\n" + FILE_LINE * 80)  # above the gate's 1500 bytes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Worker:
    """A real `cmem serve` on its own data dir; `lane` is "on" or "off"."""

    def __init__(self, work: Path, lane: str) -> None:
        self.lane = lane
        self.data = work / f"data-{lane}"
        self.data.mkdir(mode=0o700)
        self.port = free_port()
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("CLAUDE_MEM_", "ANTHROPIC_", "CMEM_"))
        }
        # Real installs have bytecode caches: a hook must not measure the compiler.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env.update(
            CLAUDE_MEM_DATA_DIR=str(self.data),
            CLAUDE_MEM_WORKER_PORT=str(self.port),
            CLAUDE_MEM_WORKER_HOST="127.0.0.1",
            CLAUDE_MEM_PROVIDER="offline",  # compression without a model or the network
            CMEM_HOT_LANE="1" if lane == "on" else "0",
        )
        self.env = env
        self.log = open(self.data / "serve.out", "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [CMEM, "serve"],
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (self.data / "worker.sock").exists() and (self.data / "worker.secret").exists():
                try:
                    if self.request("GET", "/api/health")[0] == 200:
                        return
                except OSError:
                    pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        tail = (self.data / "serve.out").read_text()[-2000:]
        raise RuntimeError(f"worker ({self.lane}) did not start: {tail}")

    def request(
        self, method: str, path: str, body: Any = None
    ) -> tuple[int, list[str], dict[str, Any]]:
        """(status, header names in order, JSON body), as the owner over TCP."""
        secret = (self.data / "worker.secret").read_text().strip()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
            data = None if body is None else json.dumps(body).encode()
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            names = [name.lower() for name, _ in resp.getheaders()]
            return resp.status, names, json.loads(resp.read() or b"{}")
        finally:
            conn.close()

    def serving_pid(self) -> int:
        """The serving process (the owner's /api/health names it), not the supervisor."""
        return int(self.request("GET", "/api/health")[2]["pid"])

    def answered_by_lane(self) -> bool:
        """Who wrote a hook's answer: the lane puts Content-Length right after Content-Type;
        through Django's chain it comes after X-Frame-Options (tests/test_hot_lane_switch.py)."""
        status, names, _ = self.request(
            "POST", "/api/hooks/claude-code/session-init", {"session_id": "probe", "cwd": "/"}
        )
        if status != 200:
            raise RuntimeError(f"worker ({self.lane}) answered the probe hook {status}")
        return names[:2] == ["content-type", "content-length"]

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=30)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.log.close()


def seed(worker: Worker, project: Path) -> None:
    """One earlier session that edited every project file, compressed into observations
    (offline), so the gate and the SessionStart index have memory to show."""
    cwd = str(project)
    worker.request("POST", "/api/hooks/claude-code/session-init", {"session_id": "seed", "cwd": cwd, "hook_event_name": "UserPromptSubmit", "prompt": "tidy the modules"})  # fmt: skip
    for i in range(FILES):
        path = str(project / _rel(i))
        edit = {"file_path": path, "old_string": "# module", "new_string": "# Module"}
        worker.request("POST", "/api/hooks/claude-code/observation", {"session_id": "seed", "cwd": cwd, "hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_input": edit, "tool_response": {"filePath": path}, "tool_use_id": f"toolu_seed_{i}"})  # fmt: skip
    worker.request("POST", "/api/hooks/claude-code/summarize", {"session_id": "seed", "cwd": cwd, "hook_event_name": "Stop", "stop_hook_active": False})  # fmt: skip


def wait_seeded(worker: Worker, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stats = worker.request("GET", "/api/stats")[2]
        if stats["observations"] >= FILES and stats["pending"] == 0:
            return
        time.sleep(0.5)
    raise RuntimeError(f"worker ({worker.lane}) did not compress the seed: {stats}")


class UnixConnection(http.client.HTTPConnection):
    """HTTP over the worker's Unix socket, where the hook client connects (the owner's)."""

    def __init__(self, path: Path) -> None:
        super().__init__("127.0.0.1", timeout=30)
        self.unix_path = str(path)

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(self.unix_path)


def answer_times(
    workers: dict[str, Worker], makers: dict[str, Callable[[int], bytes]], count: int
) -> dict[str, list[float]]:
    """Wall ms of each hook request alone, `count` per event per mode, interleaved."""
    conns = {mode: UnixConnection(worker.data / "worker.sock") for mode, worker in workers.items()}
    times: dict[str, list[float]] = {f"{e} {m}": [] for _, e in EVENTS for m in MODES}
    try:
        for n in range(100_000, 100_000 + count):
            for _, event in EVENTS:
                body = makers[event](n)
                for mode in MODES if n % 2 == 0 else MODES[::-1]:
                    started = time.perf_counter()
                    conns[mode].request(
                        "POST",
                        f"/api/hooks/claude-code/{event}",
                        body=body,
                        headers={"Content-Type": "application/json"},
                    )
                    resp = conns[mode].getresponse()
                    resp.read()
                    times[f"{event} {mode}"].append((time.perf_counter() - started) * 1000)
                    if resp.status != 200:
                        raise RuntimeError(f"{event} ({mode}) answered {resp.status}")
    finally:
        for conn in conns.values():
            conn.close()
    return times


def run_ns(pid: int) -> int:
    """CPU time (ns) the process's live threads have run: /proc/<pid>/task/*/schedstat."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(
    argv: list[str], stdin: bytes, env: dict[str, str], server_pid: int | None = None
) -> tuple[float, bytes, float, float]:
    """One whole process: (wall ms, what it printed, its own CPU ms, the serving process's
    CPU ms meanwhile, 0 without `server_pid`). It must exit 0."""
    server_before = run_ns(server_pid) if server_pid else 0
    cpu_before = _children_cpu_s()
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, env=env, capture_output=True, check=False)
    elapsed = (time.perf_counter() - started) * 1000
    own_cpu = (_children_cpu_s() - cpu_before) * 1000
    server_cpu = (run_ns(server_pid) - server_before) / 1e6 if server_pid else 0.0
    if done.returncode != 0:
        raise RuntimeError(f"{argv[-1]} exited {done.returncode}: {done.stderr[-500:]!r}")
    return elapsed, done.stdout, own_cpu, server_cpu


def check_answers(workers: dict[str, Worker], hooks: dict[str, list[str]], makers: Any) -> None:
    """Both workers answer each event the same way (warm-up, and a check that the gate and
    the index show the seeded memory)."""
    for event, argv in hooks.items():
        kinds = {}
        for mode, worker in workers.items():
            for n in range(3):
                out = timed(argv, makers[event](-1 - n), worker.env)[1]
            answer = json.loads(out or b"{}")
            kinds[mode] = sorted(answer.get("hookSpecificOutput", {}))
        if kinds["on"] != kinds["off"]:
            raise RuntimeError(f"{event}: the answers differ between the modes: {kinds}")
        if event in ("file-context", "context") and not kinds["on"]:
            raise RuntimeError(f"{event}: the answer shows no memory; the seed did not take")


def measure(runs: int, rounds: int, budget: float) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="cmem-bench-hot-lane-"))
    project = work / "project"
    make_project(project)
    workers = {mode: Worker(work, mode) for mode in MODES}
    try:
        for worker in workers.values():
            worker.wait_ready()
        lane = {mode: worker.answered_by_lane() for mode, worker in workers.items()}
        if lane != {"on": True, "off": False}:
            raise RuntimeError(f"the workers' lanes are not what was asked: {lane}")
        for worker in workers.values():
            seed(worker, project)
        for worker in workers.values():
            wait_seeded(worker)
        makers = payload_makers(project)
        entry = hook_entry_argv()
        hooks = {event: [*entry, "hook", "claude-code", event] for _, event in EVENTS}
        check_answers(workers, hooks, makers)
        result = run_rounds(workers, hooks, makers, runs=runs, rounds=rounds, budget=budget)
        result["answers"] = answer_times(workers, makers, result["runs"])
        return result
    finally:
        for worker in workers.values():
            worker.stop()
        shutil.rmtree(work, ignore_errors=True)


def run_rounds(
    workers: dict[str, Worker],
    hooks: dict[str, list[str]],
    makers: dict[str, Callable[[int], bytes]],
    *,
    runs: int,
    rounds: int,
    budget: float,
) -> dict[str, Any]:
    """`rounds` rounds of `runs // rounds` runs: in each run the floor, then every event
    against both workers back to back, the modes' order flipping every round. A round that
    would end past `budget` seconds is not started (a loaded machine stays bounded)."""
    bare = [sys.executable, "-I", "-S", "-c", "pass"]
    pids = {mode: worker.serving_pid() for mode, worker in workers.items()}
    keys = [f"{event} {mode}" for event in hooks for mode in MODES]
    times: dict[str, list[float]] = {"bare": [], **{key: [] for key in keys}}
    server_cpu: dict[str, list[float]] = {key: [] for key in keys}
    own_cpu: dict[str, list[float]] = {event: [] for event in hooks}
    rounds_saving: dict[str, list[float]] = {event: [] for event in hooks}
    per_round = max(1, runs // rounds)
    started = time.monotonic()
    done = 0
    while done < rounds:
        elapsed = time.monotonic() - started
        if done and elapsed + elapsed / done > budget:
            break
        order = MODES if done % 2 == 0 else MODES[::-1]
        for i in range(per_round):
            times["bare"].append(timed(bare, b"", workers["on"].env)[0])
            for event, argv in hooks.items():
                stdin = makers[event](done * per_round + i)
                for mode in order:
                    wall, _, own, server = timed(argv, stdin, workers[mode].env, pids[mode])
                    times[f"{event} {mode}"].append(wall)
                    own_cpu[event].append(own)
                    server_cpu[f"{event} {mode}"].append(server)
        for event in hooks:
            on = statistics.median(times[f"{event} on"][-per_round:])
            off = statistics.median(times[f"{event} off"][-per_round:])
            rounds_saving[event].append(off - on)
        done += 1
    return {
        "times": times,
        "rounds_saving": rounds_saving,
        "own_cpu": own_cpu,
        "server_cpu": server_cpu,
        "runs": per_round * done,
        "rounds": done,
        "seconds": time.monotonic() - started,
    }


def report(result: dict[str, Any]) -> str:
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    head = [
        f"{result['runs']} runs per event per mode in {result['rounds']} rounds "
        f"({result['seconds']:.0f} s); load average at the end {load}; "
        f"python {sys.version.split()[0]}; {os.cpu_count()} cores",
    ]
    return "\n".join([*head, *_wall_rows(result), *_cpu_rows(result), *_answer_rows(result)])


def saving_interval(
    on: list[float], off: list[float], resamples: int = 2000
) -> tuple[float, float]:
    """95% bootstrap interval of the saving's share of the hook (%): the pairs resampled,
    (median off - median on) / median off each time."""
    rng = random.Random(30)
    pairs = list(zip(on, off, strict=True))
    shares = []
    for _ in range(resamples):
        sample = rng.choices(pairs, k=len(pairs))
        on_ms = statistics.median(a for a, _ in sample)
        off_ms = statistics.median(b for _, b in sample)
        shares.append(100 * (off_ms - on_ms) / off_ms)
    shares.sort()
    return shares[int(0.025 * resamples)], shares[int(0.975 * resamples) - 1]


def _wall_rows(result: dict[str, Any]) -> list[str]:
    times, rounds_saving = result["times"], result["rounds_saving"]
    lines = [
        "",
        "The installed hook, whole process, wall ms: medians (best of the runs in brackets)",
        "",
        "| hook (cmem event) | lane on | lane off | saving | paired | saving, % of the hook "
        "(95% interval) | saving per round |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, event in EVENTS:
        on, off = times[f"{event} on"], times[f"{event} off"]
        on_ms, off_ms = statistics.median(on), statistics.median(off)
        paired = statistics.median(b - a for a, b in zip(on, off, strict=True))
        per_round = ", ".join(f"{value:+.1f}" for value in rounds_saving[event])
        low, high = saving_interval(on, off)
        lines.append(
            f"| {label} ({event}) | {on_ms:.2f} ({min(on):.1f}) | {off_ms:.2f} ({min(off):.1f}) "
            f"| {off_ms - on_ms:+.2f} | {paired:+.2f} | {100 * (off_ms - on_ms) / off_ms:+.1f} "
            f"({low:+.1f} to {high:+.1f}) | {per_round} |"
        )
    on_all = [t for _, event in EVENTS for t in times[f"{event} on"]]
    off_all = [t for _, event in EVENTS for t in times[f"{event} off"]]
    on_ms, off_ms = statistics.median(on_all), statistics.median(off_all)
    paired = statistics.median(b - a for a, b in zip(on_all, off_all, strict=True))
    low, high = saving_interval(on_all, off_all)
    lines.append(
        f"| the four together | {on_ms:.2f} | {off_ms:.2f} | {off_ms - on_ms:+.2f} "
        f"| {paired:+.2f} | {100 * (off_ms - on_ms) / off_ms:+.1f} ({low:+.1f} to {high:+.1f}) | |"
    )
    bare = times["bare"]
    lines.append(
        f"| floor: `python -I -S -c pass` | {statistics.median(bare):.2f} ({min(bare):.1f}) "
        "| | | | | |"
    )
    return lines


def _cpu_rows(result: dict[str, Any]) -> list[str]:
    lines = [
        "",
        "CPU per call, ms (means): the hook process's own, and the serving process's meanwhile",
        "",
        "| hook (cmem event) | hook process | worker, lane on | worker, lane off | saving "
        "| saving, % of the hook's CPU (lane off) |",
        "|---|---|---|---|---|---|",
    ]
    for label, event in EVENTS:
        own = statistics.fmean(result["own_cpu"][event])
        on = statistics.fmean(result["server_cpu"][f"{event} on"])
        off = statistics.fmean(result["server_cpu"][f"{event} off"])
        lines.append(
            f"| {label} ({event}) | {own:.2f} | {on:.2f} | {off:.2f} | {off - on:+.2f} "
            f"| {100 * (off - on) / (own + off):+.1f} |"
        )
    return lines


def _answer_rows(result: dict[str, Any]) -> list[str]:
    answers = result["answers"]
    lines = [
        "",
        "The worker's answer alone, wall ms: medians (best in brackets); HTTP over one "
        "keep-alive connection to the Unix socket",
        "",
        "| hook (cmem event) | lane on | lane off | saving |",
        "|---|---|---|---|",
    ]
    for label, event in EVENTS:
        on, off = answers[f"{event} on"], answers[f"{event} off"]
        on_ms, off_ms = statistics.median(on), statistics.median(off)
        lines.append(
            f"| {label} ({event}) | {on_ms:.2f} ({min(on):.2f}) | {off_ms:.2f} ({min(off):.2f}) "
            f"| {off_ms - on_ms:+.2f} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=240, help="per event per mode (240)")
    parser.add_argument("--rounds", type=int, default=6, help="the modes' order flips each (6)")
    parser.add_argument("--budget", type=float, default=150, help="seconds of rounds at most (150)")
    args = parser.parse_args(argv)
    print(report(measure(args.runs, args.rounds, args.budget)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
