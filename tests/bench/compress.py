"""`python -m tests.bench compress`: what the observer costs, cmem's way against claude-mem's.

1. Generate, deterministically, a realistic session of 200 tool uses (`--size N`; `--quick`
   60) in claude-mem's measured mix: 39% Read of real source files of 2-50 KB (Django's
   own package in this venv), 26% Bash, 13% Edit, 12% Grep, 5.5% Glob, 4.5% Write, with
   payloads shaped like Claude Code's (an Edit's response repeats the whole original file,
   a Write's the whole content).
2. In a child process with a temporary data dir: store the events, start the fake
   Messages API (tests/fakes/anthropic.py: usage = request characters / 4, the
   cached prefix reported as cache write, then cache read) and run the real compression
   service with the real `anthropic` SDK against it.
3. Beside it, build the requests claude-mem would send for the same replay: one per tool
   use, each resending the whole observer conversation (its init prompt, every earlier
   turn and answer, tool input and output pretty-printed and capped at 16,000 chars),
   starting over when the conversation passes 400,000 chars; size them the same way.

Prints input tokens per observation and per tool use, the cache hit share, observations
per second (the fake answers at once, so this is cmem's own overhead), and the ratio of
cmem's input tokens to claude-mem's. Target: <= 40%.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.bench.harness import REPO, child_env, cmem_migrate, django_setup, scratch_dir

MIX = [("Read", 78), ("Bash", 52), ("Edit", 26), ("Grep", 24), ("Glob", 11), ("Write", 9)]
FIELD_CAP = 16_000  # claude-mem's cap of `parameters` and `outcome`
HISTORY_RESET_CHARS = 400_000  # claude-mem starts a new observer conversation past this
# claude-mem's init prompt (identity, role, recording focus, skip guidance, XML skeleton)
# is about this long; its per-turn instruction follows every tool use.
CLAUDE_MEM_INIT_CHARS = 9_000
CLAUDE_MEM_TURN_SUFFIX = (
    "\nReturn one or more <observation> blocks, or nothing. Respect <elided/> markers. "
    "Debugging findings count as discoveries. Never reply with prose."
)


# -- the replay -------------------------------------------------------------------------------
def _source_files(root: Path) -> list[Path]:
    files = [p for p in sorted(root.rglob("*.py")) if 2_000 <= p.stat().st_size <= 50_000]
    return files


def _claude_payload(
    tool: str, tool_input: dict[str, Any], response: Any, cwd: str, n: int, error: str = ""
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "session_id": "bench-compress",
        "cwd": cwd,
        "hook_event_name": "PostToolUseFailure" if error else "PostToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": f"toolu_bench_{n:04d}",
    }
    if error:
        payload["error"] = error
    else:
        payload["tool_response"] = response
    return payload


def _facts(path: Path, root: Path, role: str) -> list[dict[str, Any]]:
    data = path.read_bytes() if path.exists() else b""
    return [
        {
            "path": str(path.relative_to(root)),
            "abs": str(path),
            "role": role,
            "size": len(data),
            "mtime": 0,
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    ]


def generate_session(size: int, *, seed: int = 42) -> tuple[str, list[dict[str, Any]]]:
    """(project root, payloads): `size` tool uses over Django's real source files."""
    import django

    package = Path(django.__file__).parent
    root = package.parent
    rng = random.Random(seed)
    files = _source_files(package)
    kinds = [k for k, weight in MIX for _ in range(weight)]
    plan = [kinds[int(i * len(kinds) / size)] for i in range(size)]
    rng.shuffle(plan)
    payloads: list[dict[str, Any]] = []
    words = [
        "get_",
        "cache",
        "Model",
        "queryset",
        "validate",
        "request",
        "migrat",
        "field",
        "render",
        "signal",
    ]
    for n, tool in enumerate(plan):
        path = rng.choice(files)
        rel = str(path.relative_to(root))
        text = path.read_text(errors="replace")
        response: dict[str, Any]
        if tool == "Read":
            lines = text.count("\n") + 1
            response = {
                "type": "text",
                "file": {
                    "filePath": str(path),
                    "content": text,
                    "numLines": lines,
                    "startLine": 1,
                    "totalLines": lines,
                },
            }
            payload = _claude_payload("Read", {"file_path": str(path)}, response, str(root), n)
            payload["cmem_files"] = _facts(path, root, "read")
        elif tool == "Edit":
            source_lines = text.splitlines(keepends=True)
            start = rng.randrange(0, max(1, len(source_lines) - 8))
            old = "".join(source_lines[start : start + rng.randint(3, 8)]) or "\n"
            new = f"    # bench edit {n}: keep the cache warm\n" + old.replace("self", "this", 1)
            response = {
                "filePath": str(path),
                "oldString": old,
                "newString": new,
                "originalFile": text,
                "structuredPatch": [
                    {
                        "oldStart": start + 1,
                        "lines": [f"-{x}" for x in old.splitlines()]
                        + [f"+{x}" for x in new.splitlines()],
                    }
                ],
                "userModified": False,
                "replaceAll": False,
            }
            payload = _claude_payload(
                "Edit",
                {"file_path": str(path), "old_string": old, "new_string": new},
                response,
                str(root),
                n,
            )
            payload["cmem_files"] = _facts(path, root, "modified")
        elif tool == "Write":
            target = root / "bench_out" / f"module_{n}.py"
            content = text[: rng.randint(1_000, min(len(text), 8_000))]
            response = {
                "type": "create",
                "filePath": str(target),
                "content": content,
                "structuredPatch": [],
            }
            payload = _claude_payload(
                "Write", {"file_path": str(target), "content": content}, response, str(root), n
            )
            payload["cmem_files"] = [
                {
                    "path": str(target.relative_to(root)),
                    "abs": str(target),
                    "role": "modified",
                    "size": len(content),
                    "mtime": 0,
                    "sha256": hashlib.sha256(content.encode()).hexdigest(),
                }
            ]
        elif tool == "Grep":
            word = rng.choice(words)
            folder = path.parent
            matches = [
                p for p in sorted(folder.rglob("*.py")) if word in p.read_text(errors="replace")
            ][:100]
            response = {
                "mode": "files_with_matches",
                "filenames": [str(p) for p in matches],
                "numFiles": len(matches),
            }
            if rng.random() < 0.4:
                content_lines = [
                    f"{p.relative_to(root)}:{i + 1}:{line.strip()}"
                    for p in matches[:10]
                    for i, line in enumerate(p.read_text(errors="replace").splitlines())
                    if word in line
                ][:120]
                response = {
                    "mode": "content",
                    "content": "\n".join(content_lines),
                    "numLines": len(content_lines),
                    "numFiles": len(matches),
                }
            payload = _claude_payload(
                "Grep",
                {"pattern": word, "path": str(folder), "output_mode": response["mode"]},
                response,
                str(root),
                n,
            )
        elif tool == "Glob":
            folder = path.parent
            listed = sorted(str(p) for p in folder.rglob("*.py"))[:100]
            payload = _claude_payload(
                "Glob",
                {"pattern": "**/*.py", "path": str(folder)},
                {
                    "filenames": listed,
                    "durationMs": 3,
                    "numFiles": len(listed),
                    "truncated": len(listed) == 100,
                },
                str(root),
                n,
            )
        else:
            payload = _bash(rng, n, rel, text, root)
        payloads.append(payload)
    return str(root), payloads


def _bash(rng: random.Random, n: int, rel: str, text: str, root: Path) -> dict[str, Any]:
    choice = rng.random()
    if choice < 0.3:
        failing = rng.random() < 0.35
        lines = [f"{rel.replace('/', '_')}::test_{i} PASSED" for i in range(rng.randint(10, 80))]
        if failing:
            trace = "\n".join(text.splitlines()[: rng.randint(20, 60)])
            error = f"Exit code 1\n{chr(10).join(lines)}\n____ test_case ____\n{trace}\nE   AssertionError: expected 3, got 4\n1 failed, {len(lines)} passed"
            return _claude_payload(
                "Bash",
                {
                    "command": f"pytest tests/{Path(rel).stem}_tests.py -q",
                    "description": "run the tests",
                },
                None,
                str(root),
                n,
                error=error,
            )
        stdout = "\n".join(lines) + f"\n{len(lines)} passed in 1.2s"
        command = f"pytest tests/{Path(rel).stem}_tests.py -q"
    elif choice < 0.5:
        command, stdout = (
            "git status",
            "On branch main\nChanges not staged for commit:\n  modified:   " + rel,
        )
    elif choice < 0.7:
        folder = (root / rel).parent
        command = f"ls -la {folder.relative_to(root)}"
        stdout = "\n".join(
            f"-rw-r--r-- 1 dev dev {p.stat().st_size:>7} Nov 30 12:00 {p.name}"
            for p in sorted(folder.iterdir())[:80]
        )
    elif choice < 0.85:
        command = f"git diff {rel}"
        stdout = "\n".join(f"+{line}" for line in text.splitlines()[: rng.randint(20, 200)])
    else:
        command = "python -m pip list"
        stdout = "\n".join(f"package-{i:03d}    {i}.{i % 7}.0" for i in range(rng.randint(50, 300)))
    response = {
        "stdout": stdout,
        "stderr": "",
        "interrupted": False,
        "isImage": False,
        "noOutputExpected": False,
    }
    return _claude_payload(
        "Bash", {"command": command, "description": "inspect"}, response, str(root), n
    )


# -- the fake model's answers ------------------------------------------------------------------
def fake_observations(uses: list[str], tag: str = "") -> str:
    """About one observation per three tool uses, each ~600 chars: a plausible answer size."""
    blocks = []
    for start in range(0, len(uses), 3):
        group = uses[start : start + 3]
        blocks.append(
            f'<observation uses="{" ".join(group)}"><type>discovery</type>'
            f"<title>How the code of tool uses {', '.join(group)} works {tag}</title>"
            "<subtitle>A one-sentence context line that names the module and the behaviour involved.</subtitle>"
            "<facts><fact>django/db/models/query.py QuerySet._fetch_all() fills the result cache once.</fact>"
            "<fact>Iterating a queryset twice reuses _result_cache.</fact></facts>"
            "<narrative>The queryset evaluates lazily; the first iteration runs the SQL and caches rows, "
            "later iterations read the cache. This explains why the test saw one query.</narrative>"
            "<concepts><concept>how-it-works</concept></concepts>"
            "<files_read><file>django/db/models/query.py</file></files_read><files_modified></files_modified></observation>"
        )
    return "\n".join(blocks)


def _answer(body: dict[str, Any]) -> Any:
    from tests.fakes.anthropic import Reply

    content = body["messages"][-1]["content"]
    if content.startswith("--- MODE SWITCH"):
        return Reply(
            text="<summary><request>Bench session</request><completed>Work</completed></summary>"
        )
    tag = hashlib.sha256(content.encode()).hexdigest()[:8]  # distinct titles per batch
    return Reply(text=fake_observations(re.findall(r'<tool_use n="(\d+)"', content), tag))


# -- claude-mem's way, sized -------------------------------------------------------------------
def _cap(text: str) -> str:
    if len(text) <= FIELD_CAP:
        return text
    head, tail = int(FIELD_CAP * 0.6), int(FIELD_CAP * 0.3)
    return f'{text[:head]}... <elided chars="{len(text) - head - tail}" original_size_chars="{len(text)}" reason="oversize" /> ...{text[-tail:]}'


def claude_mem_turn(payload: dict[str, Any], at: datetime) -> str:
    params = _cap(json.dumps(payload.get("tool_input", {}), indent=2, ensure_ascii=False))
    outcome = _cap(
        json.dumps(
            payload.get("tool_response", payload.get("error", "")), indent=2, ensure_ascii=False
        )
    )
    return (
        "<observed_from_primary_session>\n"
        f"  <what_happened>{payload['tool_name']}</what_happened>\n"
        f"  <occurred_at>{at.isoformat()}</occurred_at>\n"
        f"  <working_directory>{payload.get('cwd', '')}</working_directory>\n"
        f"  <parameters>{params}</parameters>\n"
        f"  <outcome>{outcome}</outcome>\n"
        "</observed_from_primary_session>" + CLAUDE_MEM_TURN_SUFFIX
    )


def claude_mem_cost(payloads: list[dict[str, Any]]) -> dict[str, int]:
    """Build the request claude-mem sends for each tool use (whole conversation so far) and
    size it; the conversation restarts from the init prompt past 400,000 chars."""
    start = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    history = CLAUDE_MEM_INIT_CHARS
    total_chars = requests = 0
    answer = len(fake_observations(["1"]))
    for i, payload in enumerate(payloads):
        turn = len(claude_mem_turn(payload, start + timedelta(seconds=i)))
        if history + turn > HISTORY_RESET_CHARS:
            history = CLAUDE_MEM_INIT_CHARS
        history += turn
        total_chars += history
        requests += 1
        history += answer
    summary_turn = 2_500
    total_chars += history + summary_turn
    requests += 1
    return {"requests": requests, "input_chars": total_chars, "input_tokens": total_chars // 4}


# -- the run ----------------------------------------------------------------------------------
def _child_main(size: int) -> None:
    """Runs in a child process with its own data dir: replay through the real service."""
    django_setup()
    from memory.compression import pipeline
    from memory.models import Event, Observation, Session
    from tests.fakes.anthropic import FakeAnthropic, Reply

    root, payloads = generate_session(size)
    raw_chars = sum(
        len(json.dumps(p.get("tool_input", {})))
        + len(json.dumps(p.get("tool_response", p.get("error", ""))))
        for p in payloads
    )
    session = Session.objects.create(
        session_id="bench-compress", project="django", project_root=root, cwd=root, prompt_counter=1
    )
    session.prompts.create(
        number=1,
        text="Find out why the queryset runs twice and fix it, then clean up the cache code.",
    )
    Event.objects.bulk_create(
        [
            Event(
                session=session,
                kind="observation",
                tool_name=p["tool_name"],
                tool_use_id=p["tool_use_id"],
                prompt_number=1,
                payload=p,
            )
            for p in payloads
        ]
    )
    Event.objects.create(
        session=session,
        kind="summary",
        tool_use_id="stop:1",
        prompt_number=1,
        payload={"last_assistant_message": "Fixed it."},
    )
    import anthropic  # noqa: F401 - imported once per consumer process; keep it out of the timing

    with FakeAnthropic(default=Reply(fn=_answer)) as api:
        os.environ.update(CLAUDE_MEM_ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="bench-fake-key")
        started = time.perf_counter()
        report = pipeline.session_events_process(session_pk=session.pk)
        elapsed = time.perf_counter() - started
        usages = [r.usage for r in api.requests if r.usage]
    totals = {
        k: sum(u.get(k, 0) for u in usages)
        for k in (
            "input_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
            "output_tokens",
        )
    }
    observations = Observation.objects.filter(session=session).count()
    result = {
        "tool_uses": len(payloads),
        "mix": {k: sum(1 for p in payloads if p["tool_name"] == k) for k, _ in MIX},
        "raw_chars": raw_chars,
        "requests": len(api.requests),
        "observations": observations,
        "summaries": report.summaries,
        "elapsed": elapsed,
        **totals,
        "claude_mem": claude_mem_cost(payloads),
    }
    print(json.dumps(result))


def run(*, out: Any, options: dict[str, Any]) -> None:
    size = options.get("size") or (60 if options.get("quick") else 200)
    with scratch_dir("cmem-bench-compress-") as work:
        env = child_env(
            work / "data",
            DJANGO_SETTINGS_MODULE="cmem_site.settings",
            CLAUDE_MEM_DAILY_TOKEN_BUDGET="0",
            CLAUDE_MEM_API_BACKOFF_MS="10",
        )
        cmem_migrate(env, timeout=600)
        done = subprocess.run(
            [sys.executable, "-m", "tests.bench.compress", str(size)],
            env=env,
            capture_output=True,
            text=True,
            timeout=1800,
            cwd=REPO,
        )
        if done.returncode != 0:
            out.write(done.stderr[-3000:])
            raise SystemExit(1)
        r = json.loads(done.stdout.strip().splitlines()[-1])
    _report(out, r)


def _report(out: Any, r: dict[str, Any]) -> None:
    cm = r["claude_mem"]
    total_in = r["input_tokens"] + r["cache_read_input_tokens"] + r["cache_creation_input_tokens"]
    billed = (
        r["input_tokens"]
        + 1.25 * r["cache_creation_input_tokens"]
        + 0.1 * r["cache_read_input_tokens"]
    )
    n_obs = max(1, r["observations"])
    mix = ", ".join(f"{v} {k}" for k, v in r["mix"].items())
    out.write(
        f"replay: {r['tool_uses']} tool uses ({mix}); {r['raw_chars'] / 1e6:.2f} M chars of raw tool payload"
    )
    out.write(
        f"cmem:       {r['requests']} requests, {r['observations']} observations + {r['summaries']} summary; "
        f"input {total_in:,} tokens (uncached {r['input_tokens']:,}, cache read {r['cache_read_input_tokens']:,}, "
        f"cache write {r['cache_creation_input_tokens']:,}), output {r['output_tokens']:,}"
    )
    out.write(
        f"            {total_in / n_obs:,.0f} input tokens per observation, {total_in / r['tool_uses']:,.0f} per tool use; "
        f"cache hit share {r['cache_read_input_tokens'] / max(1, total_in):.0%}; "
        f"{r['observations'] / max(r['elapsed'], 1e-9):,.1f} observations/s ({r['elapsed']:.2f} s, fake answers at once)"
    )
    out.write(
        f"claude-mem: {cm['requests']} requests resending the observer conversation (reset past 400k chars); "
        f"input {cm['input_tokens']:,} tokens, {cm['input_tokens'] / r['tool_uses']:,.0f} per tool use"
    )
    out.write(
        f"ratio:      cmem sends {total_in / max(1, cm['input_tokens']):.1%} of claude-mem's input tokens "
        f"({billed / max(1, cm['input_tokens']):.1%} billed-equivalent with cache pricing); target <= 40%"
    )


if __name__ == "__main__":
    _child_main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
