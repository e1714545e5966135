"""The Stop hook's wall time when the worker is down and it hands deliverable bytes over.

`make bench NAME=handover [ARGS="--runs N"]` (or `python -m tests.bench.handover [N]`) runs the real `cmem hook claude-code summarize`
N times (default 7) per case, each with a held spawn lock (so no worker starts) and a
transcript whose last turn wrote the case's file outside the project, and prints medians
and the load average. docs/architecture.md quotes its output.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.support.paths import CMEM


def _transcript(root: Path, paths: list[Path]) -> Path:
    lines: list[dict[str, object]] = [
        {"type": "user", "message": {"role": "user", "content": "go"}}
    ]
    for i, p in enumerate(paths):
        use = {"type": "tool_use", "id": f"t{i}", "name": "Write", "input": {"file_path": str(p)}}
        lines.append({"type": "assistant", "message": {"content": [use]}})
        result = {"type": "tool_result", "tool_use_id": f"t{i}"}
        lines.append({"type": "user", "message": {"content": [result]}})
    path = root / f"t{len(paths)}-{paths[0].name if paths else 'none'}.jsonl"
    path.write_text("\n".join(map(json.dumps, lines)) + "\n")
    return path


def _run(root: Path, transcript: Path) -> float:
    data = root / "data"
    data.mkdir(mode=0o700, exist_ok=True)
    (data / "worker.spawn.lock").write_text("0 0\n")  # fresh: the hook starts no worker
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_MEM_", "CMEM_"))}
    env.update(CLAUDE_MEM_DATA_DIR=str(data), HOME=str(root))
    body = {
        "session_id": "bench",
        "cwd": str(root / "repo"),
        "hook_event_name": "Stop",
        "transcript_path": str(transcript),
    }
    started = time.perf_counter()
    subprocess.run(
        [CMEM, "hook", "claude-code", "summarize"],
        input=json.dumps(body).encode(),
        env=env,
        capture_output=True,
        check=True,
    )
    return time.perf_counter() - started


def run(*, out: Any, options: dict[str, Any]) -> None:
    """The runner's entry (tests/bench/runner.py): --runs N, --quick for 2."""
    n = options.get("runs") or (2 if options.get("quick") else 7)
    with tempfile.TemporaryDirectory(prefix="cmem-bench-handover-") as tmp:
        root = Path(tmp)
        (root / "repo" / ".git").mkdir(parents=True)
        written = root / "out"
        written.mkdir()
        notes = written / "notes.md"
        notes.write_text("line of the notes, nothing secret here\n" * ((1 << 20) // 40 - 64))
        chart = written / "chart.png"
        chart.write_bytes(b"\x89PNG\r\n\x1a\n\x00" + os.urandom(3 << 20))
        report = written / "report.md"
        report.write_text("line of the report, nothing secret here\n" * ((4 << 20) // 41 - 64))
        cases = {
            "no deliverables": [],
            "1 MiB text (redacted into the spool)": [notes],
            "3 MiB binary (kept as is)": [chart],
            "4 MiB text (past the redaction budget: named, not kept)": [report],
        }
        transcripts = {name: _transcript(root, paths) for name, paths in cases.items()}
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(n):
            for name, transcript in transcripts.items():
                times[name].append(_run(root, transcript))
    for name, xs in times.items():
        out.write(f"{name}: median {statistics.median(xs) * 1000:.0f} ms over {len(xs)} runs")
    out.write("load average: {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))


def main(argv: list[str]) -> int:
    from django.core.management.base import OutputWrapper

    run(out=OutputWrapper(sys.stdout), options={"runs": int(argv[0]) if argv else None})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
