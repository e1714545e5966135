"""`cmem bench truth`: after a correction or a consolidation pass, does every surface the
agent is briefed by put the current fact first and never show a stale one as current?

Each scenario (truth_scenarios/*.toml, see the README there) is loaded into a throwaway data
dir by a child process (`cmem bench truth --inner`, truth_run.py), never into your memory.
The child asks the four surfaces through the same functions the worker's hooks and API call:

- index: the SessionStart text (`context_text`);
- gate: the read gate's refusal for the scenario's file (`gate_decide`, mode deny);
- recall: prompt-time recall for the query (only when search by meaning is installed);
- search: `/api/search`'s service in its default mode.

A surface passes when the `current` row is the first of the scenario's rows it shows (for
recall: when it shows any; recall leaves out rows the index already showed), no `stale` row
is shown as current (a row line with its id; a "replaces #N" note is not one), and every
row in `changed` carries the gate's `[changed]` label.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCENARIOS = Path(__file__).with_name("truth_scenarios")
SURFACES = ("index", "gate", "recall", "search")
# A row line of the index or the gate's timeline: its id first (pinned lines too).
ROW_ID = re.compile(r"^(?:- )?#?(\d+)\b", re.M)


@dataclass
class Outcome:
    scenario: str
    surface: str
    ok: bool | None  # None: not checked (the surface does not apply, or is not installed)
    detail: str = ""


@dataclass
class Scenario:
    name: str
    path: Path
    query: str
    file: str
    rows: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    current: str
    stale: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)


class ScenarioError(ValueError):
    """A scenario file that does not say what the bench needs."""


def scenarios_load(folder: Path) -> list[Scenario]:
    files = sorted(folder.glob("*.toml"))
    if not files:
        raise ScenarioError(f"no scenario files (*.toml) in {folder}")
    out = []
    for path in files:
        try:
            raw = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ScenarioError(f"{path.name}: {exc}") from exc
        expect = raw.get("expect", {})
        keys = {row.get("key") for row in raw.get("rows", [])}
        keys |= {s.get("key") for s in raw.get("steps", []) if s.get("do") == "remember"}
        named = [expect.get("current"), *expect.get("stale", []), *expect.get("changed", [])]
        missing = [k for k in named if k not in keys]
        if not raw.get("rows") or not expect.get("current") or missing:
            raise ScenarioError(
                f"{path.name}: needs [[rows]] with keys and [expect] current"
                + (f"; unknown keys {missing}" if missing else "")
            )
        out.append(
            Scenario(
                name=str(raw.get("name", path.stem)),
                path=path,
                query=str(raw.get("query", "")),
                file=str(raw.get("file", "")),
                rows=list(raw["rows"]),
                steps=list(raw.get("steps", [])),
                current=str(expect["current"]),
                stale=[str(k) for k in expect.get("stale", [])],
                changed=[str(k) for k in expect.get("changed", [])],
            )
        )
    return out


# --- the parent: a throwaway data dir, a child process, a table -----------------------


def run(*, out: Any, folder: Path = SCENARIOS) -> bool:
    """Run every scenario in `folder`; True when every checked surface of every case holds."""
    scenarios_load(folder)  # a broken file fails here, before any child starts
    with tempfile.TemporaryDirectory(prefix="cmem-truth-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_MEM_", "CMEM_"))}
        env.update(
            CLAUDE_MEM_DATA_DIR=str(Path(tmp) / "data"),
            CLAUDE_MEM_PROVIDER="offline",
            CLAUDE_MEM_CONSOLIDATE="rules",
            CLAUDE_MEM_SEMANTIC_INJECT="true",
            CLAUDE_MEM_READ_GATE_MIN_BYTES="0",
        )
        cmem = str(Path(sys.executable).with_name("cmem"))
        done = subprocess.run(
            [cmem, "bench", "truth", "--inner", tmp, "--scenarios", str(folder)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        report = Path(tmp) / "report.json"
        if done.returncode != 0 or not report.exists():
            out.write(done.stdout + done.stderr)
            out.write("bench truth: the scenario run failed (above)\n")
            return False
        outcomes = [Outcome(**row) for row in json.loads(report.read_text())]
    return _report(out, outcomes)


def _report(out: Any, outcomes: list[Outcome]) -> bool:
    names = list(dict.fromkeys(o.scenario for o in outcomes))
    width = max(len(n) for n in names)
    out.write(f"{'scenario':<{width}}  " + "  ".join(f"{s:<6}" for s in SURFACES) + "\n")
    failures = []
    for name in names:
        cells = []
        for surface in SURFACES:
            o = next((o for o in outcomes if o.scenario == name and o.surface == surface), None)
            mark = "-" if o is None or o.ok is None else "ok" if o.ok else "FAIL"
            cells.append(f"{mark:<6}")
            if o is not None and o.ok is False:
                failures.append(f"{name} / {surface}: {o.detail}")
        out.write(f"{name:<{width}}  " + "  ".join(cells) + "\n")
    checked = [o for o in outcomes if o.ok is not None]
    held = sum(1 for o in checked if o.ok)
    skipped = sorted({o.detail for o in outcomes if o.ok is None and o.detail})
    out.write(f"\n{held}/{len(checked)} checks hold ({len(names)} scenarios).\n")
    for note in skipped:
        out.write(f"not checked: {note}\n")
    for failure in failures:
        out.write(f"FAIL {failure}\n")
    return held == len(checked)
