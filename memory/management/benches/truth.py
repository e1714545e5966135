"""`cmem bench truth`: after a correction or a consolidation pass, does every surface the
agent is briefed by put the current fact first and never show a stale one as current?

Each scenario (truth_scenarios/*.toml, see the README there) is loaded into a throwaway data
dir by a child process (`cmem bench truth --inner`), never into your memory. The child asks
the four surfaces through the same functions the worker's hooks and API call:

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

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

SCENARIOS = Path(__file__).with_name("truth_scenarios")
SURFACES = ("index", "gate", "recall", "search")
# A row line of the index or the gate's timeline: its id first (pinned lines too).
_ROW_ID = re.compile(r"^(?:- )?#?(\d+)\b", re.M)


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
        done = subprocess.run(
            [sys.executable, "-m", "memory.management.benches.truth", str(folder), tmp],
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


# --- the child: seed, apply, ask ---------------------------------------------------------


def _inner(folder: Path, tmp: Path) -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cmem_site.settings")
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    outcomes: list[Outcome] = []
    for scenario in scenarios_load(folder):
        try:
            outcomes += _scenario_run(scenario, tmp / "projects" / scenario.path.stem)
        except Exception as exc:  # one broken case is a failed case, not a failed bench
            detail = f"the scenario could not run: {type(exc).__name__}: {exc}"
            outcomes += [Outcome(scenario.name, s, False, detail) for s in SURFACES]
    (tmp / "report.json").write_text(json.dumps([o.__dict__ for o in outcomes]))


def _scenario_run(scenario: Scenario, root: Path) -> list[Outcome]:
    from django.utils import timezone

    from memory.models import Observation, ObservationFile, Session
    from memory.projects import project_for_cwd

    root.mkdir(parents=True)
    project = project_for_cwd(str(root)).name
    now = timezone.now()
    ids: dict[str, int] = {}
    for n, spec in enumerate(scenario.rows):
        created = now - timedelta(
            days=float(spec.get("days_ago", 1)), minutes=len(scenario.rows) - n
        )
        session = Session.objects.create(
            platform="claude-code",
            session_id=f"truth-{scenario.path.stem}-{n}",
            project=project,
            project_root=str(root),
            cwd=str(root),
            started=created,
        )
        files = [str(f) for f in spec.get("files", [])]
        content = spec.get("file_content")
        for rel in files:
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if content is not None or not target.exists():
                target.write_text(content if content is not None else f"# {rel}\n")
        row = Observation.objects.create(
            session=session,
            project=project,
            type=spec.get("type", "discovery"),
            title=spec["title"],
            narrative=spec.get("narrative", ""),
            facts=list(spec.get("facts", [])),
            files_modified=files,
            certainty=spec.get("certainty", ""),
            origin=spec.get("origin", "observer"),
            person_edited=spec.get("origin") == "user",
            created=created,
        )
        ObservationFile.objects.bulk_create(
            ObservationFile(
                observation=row,
                project=project,
                path=rel,
                role=ObservationFile.Role.MODIFIED,
                content_hash=hashlib.sha256((root / rel).read_bytes()).hexdigest(),
                created=created,
            )
            for rel in files
        )
        ids[spec["key"]] = row.pk
    for step in scenario.steps:
        _step(step, ids, project=project, root=root)
    return [
        _check_index(scenario, ids, project, root),
        _check_gate(scenario, ids, root),
        _check_recall(scenario, ids, project, root),
        _check_search(scenario, ids, project),
    ]


def _step(step: dict[str, Any], ids: dict[str, int], *, project: str, root: Path) -> None:
    from memory.curation.corrections import observation_edit, observation_mark
    from memory.curation.remember import RememberRequest, remember

    kind = step.get("do")
    if kind == "consolidate":
        from memory.curation.consolidation.run import consolidation_run

        consolidation_run(project=project, mode=step.get("mode", "rules"))
    elif kind == "mark":
        observation_mark(
            ids[step["row"]],
            action=step["action"],
            actor=step.get("actor", "user"),
            reason=step.get("reason", ""),
            superseded_by=ids[step["by"]] if "by" in step else None,
        )
    elif kind == "edit":
        changes = {k: step[k] for k in ("title", "narrative", "facts", "type") if k in step}
        observation_edit(ids[step["row"]], changes=changes, actor=step.get("actor", "user"))
    elif kind == "remember":
        result = remember(
            RememberRequest(
                project=project,
                title=step["title"],
                text=step.get("text", ""),
                kind=step.get("kind", "note"),
                topic=step.get("topic", ""),
                actor=step.get("actor", "user"),
                project_root=str(root),
            )
        )
        ids[step["key"]] = result.observation.pk
    elif kind == "change_file":
        (root / step["path"]).write_text(step["content"])
    else:
        raise ScenarioError(f"unknown step {kind!r}")


def _verdict(
    scenario: Scenario, surface: str, shown: list[int], ids: dict[str, int], *, first: bool = True
) -> Outcome:
    mine = {pk: key for key, pk in ids.items()}
    ours = [mine[pk] for pk in shown if pk in mine]
    stale = [key for key in ours if key in scenario.stale]
    if stale:
        return Outcome(scenario.name, surface, False, f"shows {stale} as current (order {ours})")
    if first and (not ours or ours[0] != scenario.current):
        return Outcome(
            scenario.name, surface, False, f"leads with {ours[:3]}, not {scenario.current!r}"
        )
    return Outcome(scenario.name, surface, True)


def _check_index(scenario: Scenario, ids: dict[str, int], project: str, root: Path) -> Outcome:
    from memory.briefing.context import context_text

    text = context_text(project=project, root=str(root))
    shown = [int(m) for m in _ROW_ID.findall(text)]
    # The index lists days oldest first: the current row must be there, the stale absent.
    outcome = _verdict(scenario, "index", shown, ids, first=False)
    if outcome.ok and ids[scenario.current] not in shown:
        return Outcome(scenario.name, "index", False, f"{scenario.current!r} is not in the index")
    return outcome


def _check_gate(scenario: Scenario, ids: dict[str, int], root: Path) -> Outcome:
    from memory.agents.base import HookEvent
    from memory.briefing.gate import gate_decide

    if not scenario.file:
        return Outcome(scenario.name, "gate", None, "")
    event = HookEvent(
        platform="claude-code",
        event="file-context",
        session_id=f"truth-reader-{scenario.path.stem}",
        cwd=str(root),
        hook_event_name="PreToolUse",
        tool_name="Read",
        tool_input={"file_path": str(root / scenario.file)},
    )
    result = gate_decide(event=event, mode="deny")
    text = result.gate.reason or result.gate.context if result.gate else ""
    if not text:
        return Outcome(scenario.name, "gate", False, "the gate said nothing about the file")
    rows = {int(m.group(1)): line for line in text.splitlines() if (m := _ROW_ID.match(line))}
    outcome = _verdict(scenario, "gate", list(rows), ids)
    for key in scenario.changed:
        if "[changed]" not in rows.get(ids[key], ""):
            return Outcome(scenario.name, "gate", False, f"{key!r} is not labelled [changed]")
    return outcome


def _check_recall(scenario: Scenario, ids: dict[str, int], project: str, root: Path) -> Outcome:
    from memory.briefing.prompt_recall import related_notes
    from memory.models import Session
    from memory.retrieval import embeddings
    from memory.retrieval.embeddings import store

    if not embeddings.available():
        return Outcome(
            scenario.name,
            "recall",
            None,
            "prompt recall needs search by meaning (cmem[embeddings])",
        )
    store.embed_pending(limit=10_000)
    session = Session.objects.create(
        platform="claude-code",
        session_id=f"truth-asker-{scenario.path.stem}",
        project=project,
        project_root=str(root),
        cwd=str(root),
    )
    text = related_notes(session=session, text=scenario.query)
    shown = [int(m) for m in re.findall(r"^- #(\d+)", text, re.M)]
    return _verdict(scenario, "recall", shown, ids, first=False)


def _check_search(scenario: Scenario, ids: dict[str, int], project: str) -> Outcome:
    from memory.retrieval.search.query import SearchQuery
    from memory.retrieval.search.service import search

    hits = search(
        SearchQuery(text=scenario.query, project=project, kinds=("observation",), limit=20)
    )
    return _verdict(scenario, "search", [h.id for h in hits], ids)


if __name__ == "__main__":
    _inner(Path(sys.argv[1]), Path(sys.argv[2]))
