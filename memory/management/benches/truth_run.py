"""The child of `cmem bench truth` (truth.py): seeds each scenario into the throwaway data dir
this process was started on, applies its steps and asks the four surfaces."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.utils import timezone

from memory.agents.base import HookEvent
from memory.briefing.context import context_text
from memory.briefing.gate import gate_decide
from memory.briefing.prompt_recall import related_notes
from memory.curation.consolidation.run import consolidation_run
from memory.curation.corrections import observation_edit, observation_mark
from memory.curation.remember import RememberRequest, remember
from memory.management.benches.truth import (
    ROW_ID,
    SURFACES,
    Outcome,
    Scenario,
    ScenarioError,
    scenarios_load,
)
from memory.models import Observation, ObservationFile, Session
from memory.projects import project_for_cwd
from memory.retrieval import embeddings
from memory.retrieval.embeddings import store
from memory.retrieval.search.query import SearchQuery
from memory.retrieval.search.service import search


def truth_run(folder: Path, tmp: Path) -> None:
    """The child (`cmem bench truth --inner TMP`): Django is set up on the throwaway data dir."""
    call_command("migrate", verbosity=0)
    outcomes: list[Outcome] = []
    for scenario in scenarios_load(folder):
        try:
            outcomes += _scenario_run(scenario, tmp / "projects" / scenario.path.stem)
        except Exception as exc:  # noqa: BLE001  (one broken case is a failed case, not a failed bench)
            detail = f"the scenario could not run: {type(exc).__name__}: {exc}"
            outcomes += [Outcome(scenario.name, s, False, detail) for s in SURFACES]
    (tmp / "report.json").write_text(json.dumps([o.__dict__ for o in outcomes]))


def _scenario_run(scenario: Scenario, root: Path) -> list[Outcome]:
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
    kind = step.get("do")
    if kind == "consolidate":
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
    text = context_text(project=project, root=str(root))
    shown = [int(m) for m in ROW_ID.findall(text)]
    # The index lists days oldest first: the current row must be there, the stale absent.
    outcome = _verdict(scenario, "index", shown, ids, first=False)
    if outcome.ok and ids[scenario.current] not in shown:
        return Outcome(scenario.name, "index", False, f"{scenario.current!r} is not in the index")
    return outcome


def _check_gate(scenario: Scenario, ids: dict[str, int], root: Path) -> Outcome:
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
    rows = {int(m.group(1)): line for line in text.splitlines() if (m := ROW_ID.match(line))}
    outcome = _verdict(scenario, "gate", list(rows), ids)
    for key in scenario.changed:
        if "[changed]" not in rows.get(ids[key], ""):
            return Outcome(scenario.name, "gate", False, f"{key!r} is not labelled [changed]")
    return outcome


def _check_recall(scenario: Scenario, ids: dict[str, int], project: str, root: Path) -> Outcome:
    if not embeddings.available():
        return Outcome(
            scenario.name,
            "recall",
            None,
            "prompt recall needs search by meaning (cmemory[embeddings])",
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
    hits = search(
        SearchQuery(text=scenario.query, project=project, kinds=("observation",), limit=20)
    )
    return _verdict(scenario, "search", [h.id for h in hits], ids)
