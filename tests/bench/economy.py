"""`python -m tests.bench economy`: what the read gate costs or saves a real Claude Code session.

The same two-session replay runs through the real `claude` CLI (the pinned 2.1.332 in
`.e2e-node/`, or CMEM_CLAUDE_BIN) against a scripted model on 127.0.0.1
(tests/fakes/anthropic.py), once without memory and once with it under each policy:

- session 1 reads FILES real source files (Django's own, ~140 KB, copied into a scratch
  project); with memory on they are captured and compressed (offline compressor);
- session 2 asks about the same files again. The scripted model reads each file; when the
  gate refuses a read it answers by its policy:
  `follows`  the cheapest path the refusal offers: the structure of one file (the outline the
             refusal carries; smart_outline when it carries none), get_observations with the
             refusal's ids for the next (through Claude Code's tool search when the tools are
             deferred);
  `rereads`  reads the file again (the second Read always passes);
  `mixed`    follows for even files, reads again for odd ones;
  `index`    follows the SessionStart index's advice before any refusal: a file the index
             lists is never read, its outline or observations are fetched instead.

Reported per run, from the requests the fake server received for session 2 (it sees every
request the CLI sends): the conversation at the end (the last request's messages: prompts,
tool calls and results, hook context) and the input sent over the session (the sum of every
request's messages), in tokens (characters / 4), and the same two with Claude Code's system
prompt and tool definitions included; each as a ratio to memory off. Targets (issue 20):
`follows` conversation <= 30% and input <= 40% of memory off; `rereads` input <= 120%.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory.briefing.refusal import OUTLINE_HEADING
from tests.bench.harness import free_port, owner_headers, running_worker
from tests.bench.harness import worker_env as make_worker_env
from tests.fakes.anthropic import FakeAnthropic, Reply, _blocks_in_order, _chars

REPO = Path(__file__).resolve().parents[2]
PINNED = "2.1.332"
POLICIES = ("follows", "rereads", "mixed", "index")
SESSION_1, SESSION_2 = "ECONOMY-SESSION-ONE", "ECONOMY-SESSION-TWO"
FILES = 8
TARGETS = {"follows": {"conversation": 0.30, "input": 0.40}, "rereads": {"input": 1.20}}


def claude_binary() -> Path | None:
    """The pinned CLI: CMEM_CLAUDE_BIN, the checkout's `.e2e-node/`, else `claude` on PATH."""
    node = REPO / ".e2e-node" / "node_modules"
    candidates = [
        Path(os.environ["CMEM_CLAUDE_BIN"]) if os.environ.get("CMEM_CLAUDE_BIN") else None,
        node / "@anthropic-ai" / "claude-code-linux-x64" / "claude",
        node / ".bin" / "claude",
        Path(shutil.which("claude") or "/nonexistent"),
    ]
    for path in candidates:
        if path and path.exists() and os.access(path, os.X_OK):
            return path
    return None


def source_files(count: int = FILES) -> list[Path]:
    """`count` real source files of 16-19.5 KB from Django's package, deterministically."""
    import django

    root = Path(django.__file__).parent
    found = [
        p
        for p in sorted(root.rglob("*.py"))
        if 16_000 <= p.stat().st_size <= 19_500 and "migrations" not in p.parts
    ]
    step = max(1, len(found) // max(count, 1))
    return found[::step][:count]


# -- the scripted model ----------------------------------------------------------------------


@dataclass
class Step:
    name: str
    input: dict[str, Any]
    error: bool
    text: str


def _history(body: dict[str, Any]) -> list[Step]:
    """The conversation's tool calls in order, each with its result."""
    results: dict[str, tuple[bool, str]] = {}
    calls: list[tuple[str, str, dict[str, Any]]] = []
    for message in body.get("messages", []):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_use":
                calls.append((block["id"], block["name"], block.get("input") or {}))
            elif block.get("type") == "tool_result":
                inner = block.get("content")
                text = (
                    inner
                    if isinstance(inner, str)
                    else "\n".join(b.get("text", "") for b in inner or [] if isinstance(b, dict))
                )
                results[block.get("tool_use_id", "")] = (bool(block.get("is_error")), text)
    return [Step(n, i, *results.get(tid, (False, ""))) for tid, n, i in calls]


def _text(value: Any) -> str:
    """Every text a messages structure holds, joined (hook context, results, prompts)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(v) for v in value)
    if isinstance(value, dict):
        return _text(value.get("text") or value.get("content") or "")
    return ""


def _marker(body: dict[str, Any]) -> str:
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        said = (
            content
            if isinstance(content, str)
            else " ".join(b.get("text", "") for b in content or [] if b.get("type") == "text")
        )
        for marker in (SESSION_1, SESSION_2):
            if marker in said:
                return marker
    return ""


@dataclass
class ScriptedModel:
    """Answers Claude Code from the conversation alone (no state: a retried request gets the
    same answer). `tool_prefix` is how Claude Code names cmem's MCP tools."""

    files: list[str]
    policy: str = "follows"
    tool_prefix: str = "mcp__cmem__"
    counter: list[int] = field(default_factory=lambda: [0])

    def _tool(self, name: str, tool_input: dict[str, Any]) -> Reply:
        self.counter[0] += 1
        block = {
            "type": "tool_use",
            "id": f"toolu_econ_{self.counter[0]:05d}",
            "name": name,
            "input": tool_input,
        }
        return Reply(content=[block], stop_reason="tool_use")

    def _follows(self, index: int) -> bool:
        return self.policy == "follows" or (self.policy == "mixed" and index % 2 == 0)

    def reply(self, body: dict[str, Any]) -> Reply:
        if not body.get("tools") or not _marker(body):
            return Reply(text="ok")  # a side request (titles, quota): not the conversation
        steps = _history(body)
        if self.policy == "index" and _marker(body) == SESSION_2:
            return self._from_index(body, steps)
        if not steps:
            return self._tool("Read", {"file_path": self.files[0]})
        last = steps[-1]
        # The file in hand is the last one read (a memory tool or tool search answers it).
        reads = [s for s in steps if s.name == "Read"]
        current = str(reads[-1].input.get("file_path", "")) if reads else ""
        index = self.files.index(current) if current in self.files else len(self.files)
        refused = last.name == "Read" and last.error and "Read blocked" in last.text
        if refused and _marker(body) == SESSION_2:
            if not self._follows(index):
                return self._tool("Read", {"file_path": current})
            if index % 2 == 0 and OUTLINE_HEADING in last.text:
                # The structure it would have asked smart_outline for is in the refusal.
                return self._next(index)
            return self._memory_tool(body, steps, index, last.text)
        if last.name == "ToolSearch":
            return self._memory_tool(body, steps, index, self._refusal_text(steps))
        return self._next(index)

    def _next(self, index: int) -> Reply:
        """Read the file after `index`, or finish."""
        following = index + 1
        if following < len(self.files):
            return self._tool("Read", {"file_path": self.files[following]})
        return Reply(text=f"Reviewed {len(self.files)} files.")

    def _from_index(self, body: dict[str, Any], steps: list[Step]) -> Reply:
        """Each file the index names through a memory tool, in order; others by Read."""
        said = _text(body.get("messages", []))
        done = sum(1 for s in steps if s.name not in {"ToolSearch"} and not s.error)
        if done >= len(self.files):
            return Reply(text=f"Reviewed {len(self.files)} files.")
        path = self.files[done]
        if f"src/{Path(path).name}" not in said:
            return self._tool("Read", {"file_path": path})
        ids = [
            int(i)
            for i in re.findall(rf"(?m)^(\d+) .{{0,12}}src/{re.escape(Path(path).name)}", said)
        ][:1]
        names = {t.get("name") for t in body.get("tools", [])}
        outline, get = self.tool_prefix + "smart_outline", self.tool_prefix + "get_observations"
        if outline not in names and not any(s.name == "ToolSearch" for s in steps):
            return self._tool("ToolSearch", {"query": f"select:{outline},{get}"})
        if done % 2 == 1 and ids:
            return self._tool(get, {"ids": ids})
        return self._tool(outline, {"file_path": path})

    def _refusal_text(self, steps: list[Step]) -> str:
        for step in reversed(steps):
            if step.name == "Read" and step.error:
                return step.text
        return ""

    def _memory_tool(
        self, body: dict[str, Any], steps: list[Step], index: int, refusal: str
    ) -> Reply:
        """smart_outline for even files, get_observations (ids from the refusal) for odd ones,
        loading both through Claude Code's tool search when they are still deferred."""
        names = {t.get("name") for t in body.get("tools", [])}
        outline, get = self.tool_prefix + "smart_outline", self.tool_prefix + "get_observations"
        searched = any(s.name == "ToolSearch" for s in steps)
        if outline not in names and "ToolSearch" in names and not searched:
            return self._tool("ToolSearch", {"query": f"select:{outline},{get}"})
        path = self.files[index]
        ids = [int(i) for i in re.findall(r"(?m)^(\d+) \d{1,2}:\d\d", refusal)][:3]
        if index % 2 == 1 and ids:
            return self._tool(get, {"ids": ids})
        return self._tool(outline, {"file_path": path})


# -- one run -----------------------------------------------------------------------------------


@dataclass
class Sizes:
    requests: int = 0
    conversation: int = 0  # tokens of the last request's messages
    input: int = 0  # tokens of every request's messages, summed
    conversation_full: int = 0  # the same with system prompt and tools
    input_full: int = 0
    tool_errors: int = 0
    refusals: int = 0


def _messages_tokens(body: dict[str, Any]) -> int:
    return sum(_chars(m.get("content", "")) for m in body.get("messages", [])) // 4


def _full_tokens(body: dict[str, Any]) -> int:
    return sum(_chars(b) for b in _blocks_in_order(body)) // 4


def sizes_of(bodies: list[dict[str, Any]]) -> Sizes:
    out = Sizes(requests=len(bodies))
    for body in bodies:
        out.input += _messages_tokens(body)
        out.input_full += _full_tokens(body)
    if bodies:
        last = bodies[-1]
        out.conversation = _messages_tokens(last)
        out.conversation_full = _full_tokens(last)
        steps = _history(last)
        out.refusals = sum(1 for s in steps if s.name == "Read" and "Read blocked" in s.text)
        out.tool_errors = sum(1 for s in steps if s.error) - out.refusals
    return out


@dataclass
class RunResult:
    policy: str
    memory: bool
    sizes: Sizes
    seconds: float
    ledger: dict[str, Any] = field(default_factory=dict)
    model: str = ""  # the model Claude Code asked the fake server for


def _claude(
    binary: Path, project: Path, env: dict[str, str], settings: Path, prompt: str, timeout: float
) -> subprocess.CompletedProcess[bytes]:
    args = [str(binary), "-p", prompt, "--output-format", "json"]
    if settings.exists():
        args += ["--settings", str(settings)]
    args += ["--dangerously-skip-permissions"]
    return subprocess.run(args, cwd=project, env=env, capture_output=True, timeout=timeout)


def _get(url: str, data_dir: Path) -> Any:
    request = urllib.request.Request(url, headers=owner_headers(data_dir))
    with urllib.request.urlopen(request, timeout=5) as resp:
        return json.loads(resp.read())


def _wait_compressed(url: str, data_dir: Path, want: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stats = _get(url + "/api/stats", data_dir)
        if stats.get("pending") == 0 and stats.get("observations", 0) >= want:
            return
        time.sleep(0.3)
    raise RuntimeError(f"session 1 was not compressed in {timeout:.0f} s: {stats}")


def _ledger(data_dir: Path) -> dict[str, Any]:
    import sqlite3

    db = sqlite3.connect(f"file:{data_dir / 'cmem.sqlite3'}?mode=ro", uri=True, timeout=10)
    try:
        rows = db.execute(
            "SELECT kind, detail, outcome, COUNT(*) FROM memory_ledgerentry "
            "WHERE kind != 'observer' GROUP BY kind, detail, outcome ORDER BY kind"
        ).fetchall()
        models = [m for (m,) in db.execute("SELECT model FROM memory_session ORDER BY id")]
    finally:
        db.close()
    out: dict[str, Any] = {"/".join(x for x in (k, d, o) if x): n for k, d, o, n in rows}
    out["session_models"] = models  # read from each session's transcript at Stop
    return out


def run_once(
    *, binary: Path, files: list[Path], policy: str, memory: bool, timeout: float = 600
) -> RunResult:
    """One two-session replay in a scratch HOME, project and data dir."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"cmem-economy-{policy}-") as tmp:
        root = Path(tmp)
        home, project, data = root / "home", root / "shop", root / "data"
        (home / ".claude").mkdir(parents=True)
        (project / "src").mkdir(parents=True)
        data.mkdir(mode=0o700)
        targets = []
        for source in files:
            target = project / "src" / f"{source.parent.name}_{source.name}"
            shutil.copyfile(source, target)
            targets.append(str(target))
        model = ScriptedModel(files=targets, policy=policy)
        api = FakeAnthropic(default=Reply(fn=model.reply)).start()
        port = free_port()
        worker_env = make_worker_env(
            data,
            port,
            HOME=str(home),
            CLAUDE_MEM_PROVIDER="offline",
            CLAUDE_MEM_READ_GATE=os.environ.get("CMEM_ECONOMY_GATE", "adaptive"),
        )
        cmem = str(Path(sys.executable).with_name("cmem"))
        settings = home / ".claude" / "settings.json"
        env = {
            **{k: v for k, v in worker_env.items() if not k.startswith("CLAUDE_MEM_READ")},
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": "sk-ant-economy-fake",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "IS_SANDBOX": "1",
        }
        with contextlib.ExitStack() as stack:
            stack.callback(api.stop)
            if memory:
                stack.enter_context(running_worker(worker_env))
                subprocess.run(
                    [cmem, "install", "--settings-file", str(settings)],
                    env=worker_env,
                    check=True,
                    capture_output=True,
                    timeout=120,
                )
            first = _claude(
                binary, project, env, settings, f"{SESSION_1}: read the sources", timeout
            )
            if first.returncode != 0:
                raise RuntimeError(f"session 1 failed: {first.stderr.decode()[-1500:]}")
            if memory:
                _wait_compressed(f"http://127.0.0.1:{port}", data, len(targets))
            mark = len(api.requests)
            second = _claude(
                binary,
                project,
                env,
                settings,
                f"{SESSION_2}: review the same sources again",
                timeout,
            )
            if second.returncode != 0:
                raise RuntimeError(f"session 2 failed: {second.stderr.decode()[-1500:]}")
            bodies = [
                r.body
                for r in api.requests[mark:]
                if r.body.get("tools") and _marker(r.body) == SESSION_2
            ]
            dump = os.environ.get("CMEM_ECONOMY_DUMP")
            if dump:  # for a post-mortem: what Claude Code sent in session 2
                name = f"{policy}-{'on' if memory else 'off'}.json"
                Path(dump, name).write_text(json.dumps(bodies, indent=1))
            ledger = _ledger(data) if memory else {}
            if memory:
                ledger["gate"] = _get(f"http://127.0.0.1:{port}/api/gate/modes", data)
    asked = str(bodies[-1].get("model", "")) if bodies else ""
    return RunResult(policy, memory, sizes_of(bodies), time.monotonic() - started, ledger, asked)


# -- the command -------------------------------------------------------------------------------


def ratio(value: int, base: int) -> float:
    return value / base if base else 0.0


def report(results: list[RunResult]) -> list[str]:
    """The table, one line per run, ratios to the memory-off run, and the targets."""
    base = next(r for r in results if not r.memory).sizes
    lines = [
        f"{'run':<18} {'requests':>8} {'conv end':>9} {'ratio':>6} {'input sent':>11} {'ratio':>6}"
        f" {'with system+tools: conv':>24} {'input':>9} {'ratio':>6}  refusals"
    ]
    for r in results:
        s = r.sizes
        name = f"{r.policy} memory on" if r.memory else "memory off"
        lines.append(
            f"{name:<18} {s.requests:>8} {s.conversation:>9,} {ratio(s.conversation, base.conversation):>6.0%}"
            f" {s.input:>11,} {ratio(s.input, base.input):>6.0%} {s.conversation_full:>24,}"
            f" {s.input_full:>9,} {ratio(s.input_full, base.input_full):>6.0%}  {s.refusals}"
        )
    for r in results:
        target = TARGETS.get(r.policy) if r.memory else None
        if not target:
            continue
        for key, limit in target.items():
            got = ratio(getattr(r.sizes, key), getattr(base, key))
            verdict = "met" if got <= limit else "MISSED"
            lines.append(
                f"target {r.policy} {key} <= {limit:.0%} of memory off: {got:.0%} ({verdict})"
            )
    for r in results:
        if r.memory:
            gate = r.ledger.get("gate") or [{}]
            lines.append(
                f"{r.policy}: ledger {json.dumps({k: v for k, v in r.ledger.items() if k not in ('gate', 'session_models')})};"
                f" gate at the end: {gate[0].get('mode')} ({gate[0].get('why')})"
            )
    return lines


def run(*, out: Any, options: dict[str, Any]) -> None:
    binary = claude_binary()
    if binary is None:
        out.write(
            f"bench economy: the Claude Code CLI is not installed: npm install --prefix "
            f"{REPO / '.e2e-node'} @anthropic-ai/claude-code@{PINNED} (or set CMEM_CLAUDE_BIN)"
        )
        return
    count = 4 if options.get("quick") else FILES
    files = source_files(count)
    total = sum(p.stat().st_size for p in files)
    out.write(
        f"{len(files)} files, {total / 1024:.0f} KB from Django's source; claude at {binary}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    results = [run_once(binary=binary, files=files, policy="follows", memory=False)]
    for policy in POLICIES:
        results.append(run_once(binary=binary, files=files, policy=policy, memory=True))
    for line in report(results):
        out.write(line)
    out.write(f"load average at the end {os.getloadavg()[0]:.1f}; tokens = characters / 4")
