"""The consolidation pass: per project, plan (offline rules or the model's judgement, then
demotion), then apply each change through `observation_mark` as the `consolidation`
actor, under one batch id, so every change is a revision with its reason and an undo.

Budgeted like the observer: model requests stop before CLAUDE_MEM_CONSOLIDATE_MAX_TOKENS
would be passed (what is left waits for the next pass), and each request is a ledger line
(kind `consolidation`). A dry run plans and reports, and neither changes a row nor asks the
model (it says how many groups it would send and what that may cost).
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.db.models import Q
from django.utils import timezone

from memory import config
from memory.compression import llm
from memory.compression.observer import compressor_mode
from memory.curation.consolidation import model
from memory.curation.consolidation.candidates import Row, Window, windows
from memory.curation.consolidation.plan import DEMOTE, Change, Plan, undone_changes
from memory.curation.consolidation.rules import plan_rules
from memory.curation.corrections import observation_mark
from memory.curation.policy import Actor, CurationDenied, CurationError, CurationNotFound
from memory.ledger import ledger_record_consolidation
from memory.models import Observation
from memory.runtime import locks

log = logging.getLogger(__name__)

MODES = ("auto", "rules", "model", "off")
# Rows one pass demotes per project at most (oldest first): the rest follow next pass.
DEMOTE_MAX = 500


class ConsolidationError(ValueError):
    """The pass cannot run as asked (an unknown mode, the model with no provider)."""


@dataclass
class PassReport:
    batch: str
    mode: str
    dry_run: bool
    changes: list[Change] = field(default_factory=list)
    applied: int = 0
    skipped: int = 0  # changes the rules refused, or that failed when applied
    ignored: int = 0  # model proposals dropped by the strict parser
    requests: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    groups: int = 0  # groups sent to the model (dry run: that would be sent)
    groups_left: int = 0  # groups left for the next pass (budget spent, model failing)
    estimated_tokens: int = 0  # dry run in model mode: what sending `groups` may cost
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "mode": self.mode,
            "dry_run": self.dry_run,
            "changes": [c.as_dict() for c in self.changes],
            "applied": self.applied,
            "skipped": self.skipped,
            "ignored": self.ignored,
            "requests": self.requests,
            "tokens": self.tokens,
            "cost_usd": round(self.cost_usd, 6),
            "groups": self.groups,
            "groups_left": self.groups_left,
            "estimated_tokens": self.estimated_tokens,
            "notes": self.notes,
        }

    def summary(self) -> str:
        if self.mode == "off":
            return "Consolidation is off (CLAUDE_MEM_CONSOLIDATE=off): nothing was looked at."
        if self.dry_run:
            head = (
                f"Dry run ({self.mode}): {len(self.changes)} change(s) would be made; "
                "nothing was changed."
            )
            if self.mode == "model":
                head += (
                    f" The model would be asked about {self.groups} group(s)"
                    f" (~{self.estimated_tokens:,} tokens at most)."
                )
            return head
        head = f"Pass {self.batch} ({self.mode}): {self.applied} change(s) made"
        if self.skipped:
            head += f", {self.skipped} skipped"
        if self.mode == "model":
            head += (
                f"; {self.requests} model request(s), {self.tokens:,} tokens"
                f" (${self.cost_usd:.4f}), {self.ignored} proposal(s) ignored"
            )
        return head + "."

    def lines(self) -> list[str]:
        verb = "would " if self.dry_run else ""
        out = [self.summary()]
        out += [f"  {verb}{c.describe()}" for c in self.changes]
        out += [f"  note: {n}" for n in self.notes]
        return out


def mode_resolved(requested: str | None = None) -> str:
    """rules, model or off: `requested` (else the setting), `auto` resolved to the model
    when the observer has a model provider, else the rules."""
    asked = (requested or config.consolidate_mode() or "auto").strip().lower()
    if asked not in MODES:
        raise ConsolidationError(f"mode must be one of {', '.join(MODES)}, not {asked!r}")
    if asked in {"off", "rules"}:
        return asked
    observer, why = compressor_mode()
    if observer == "api":
        return "model"
    if asked == "model":
        raise ConsolidationError(
            f"the model mode needs the observer's model provider, and it is not available ({why});"
            " use --mode rules, or configure a provider (docs/guide/observers.md)"
        )
    return "rules"


def consolidation_run(
    *, project: str | None = None, mode: str | None = None, dry_run: bool = False
) -> PassReport:
    """One pass over every project the viewer may change (or `project`)."""
    resolved = mode_resolved(mode)
    now = timezone.now()
    report = PassReport(
        batch=f"c{now:%Y%m%d%H%M%S}{secrets.token_hex(3)}", mode=resolved, dry_run=dry_run
    )
    if resolved == "off":
        return report
    with _exclusive(dry_run) as free:
        if not free:
            report.notes.append("another consolidation pass is running; try again later")
            return report
        state = _state_read()
        judged: dict[str, str] = state.get("judged", {}) if isinstance(state, dict) else {}
        for found in windows(project=project):
            _window_pass(found, report, judged=judged, now=now)
        if not dry_run:
            _state_write({"last_pass": now.isoformat(), "batch": report.batch, "judged": judged})
    return report


def _window_pass(
    window: Window, report: PassReport, *, judged: dict[str, str], now: datetime
) -> None:
    plan = Plan(project=window.project, undone=undone_changes([r.id for r in window.rows]))
    if report.mode == "rules":
        plan_rules(window, plan)
    else:
        _model_pass(window, plan, report, judged=judged)
    _plan_demotions(window, plan, now=now)
    report.skipped += plan.skipped
    report.changes += plan.changes
    if report.dry_run:
        return
    for change in plan.changes:
        try:
            observation_mark(
                change.observation_id,
                action=change.action,
                actor=Actor.CONSOLIDATION,
                reason=change.reason,
                superseded_by=change.superseded_by,
                batch=report.batch,
            )
        except (CurationDenied, CurationError, CurationNotFound) as exc:
            # A person took the row (or its successor) over since the window was read.
            log.info("consolidation skipped #%s: %s", change.observation_id, exc)
            report.skipped += 1
            continue
        report.applied += 1


def _model_pass(window: Window, plan: Plan, report: PassReport, *, judged: dict[str, str]) -> None:
    key = f"{window.project}\0{window.owner_id or ''}"
    since = _parse_time(judged.get(key))
    groups = model.model_groups(window, plan, since=since)
    if not groups:
        return
    if report.dry_run:
        report.groups += len(groups)
        report.estimated_tokens += sum(model.estimate_tokens(m) for _, m in model.batches(groups))
        return
    budget = config.consolidate_max_tokens()
    sent = 0
    for chunk, message in model.batches(groups):
        if report.groups_left or report.tokens + model.estimate_tokens(message) > budget:
            if not report.groups_left:
                report.notes.append(
                    f"the pass's budget (CLAUDE_MEM_CONSOLIDATE_MAX_TOKENS={budget:,}) is spent;"
                    " the remaining groups wait for the next pass"
                )
            report.groups_left += len(groups) - sent
            return
        try:
            reply = llm.complete(
                system=model.SYSTEM_PROMPT,
                messages=[{"role": "user", "content": message}],
                max_tokens=model.MAX_TOKENS,
            )
        except llm.LLMError as exc:
            report.notes.append(f"the model request failed ({exc}); the rest waits")
            report.groups_left += len(groups) - sent
            return
        ledger_record_consolidation(
            project=window.project, usage=reply.usage, owner_id=window.owner_id
        )
        report.requests += 1
        report.tokens += reply.usage.total
        report.cost_usd += reply.usage.cost_usd
        _, ignored = model.reply_parse(reply.text, chunk, plan)
        report.ignored += ignored
        sent += len(chunk)
        report.groups += len(chunk)
        # Groups go oldest news first: every group up to this chunk's newest row is judged
        # (less a microsecond when an unsent group ties with it, so that one is not lost).
        upto = chunk[-1].newest
        if sent < len(groups) and groups[sent].newest <= upto:
            upto -= timedelta(microseconds=1)
        judged[key] = upto.isoformat()
    if window.rows:
        judged[key] = max(r.created for r in window.rows).isoformat()


def _plan_demotions(window: Window, plan: Plan, *, now: datetime) -> None:
    """Rows never recalled (or not for N weeks) and older than N weeks leave the index;
    pinned rows and a person's rows never do. Oldest first, DEMOTE_MAX a pass."""
    weeks = config.demote_after_weeks()
    if weeks <= 0:
        return
    cutoff = now - timedelta(weeks=weeks)
    rows = list(
        Observation.objects.current()
        .filter(
            project=window.project,
            session__owner_id=window.owner_id,
            demoted=False,
            pinned=False,
            person_edited=False,
            created__lt=cutoff,
        )
        .exclude(origin=Observation.Origin.USER)
        .filter(Q(last_recalled__isnull=True) | Q(last_recalled__lt=cutoff))
        .exclude(pk__in=plan.taken)
        .order_by("created", "pk")
        .only("pk", "type", "title", "topic", "created", "certainty", "origin")[:DEMOTE_MAX]
    )
    plan.undone |= undone_changes([o.pk for o in rows])
    for obs in rows:
        row = Row(
            id=obs.pk,
            type=obs.type,
            title=obs.title,
            text="",
            files=frozenset(),
            topic=obs.topic,
            created=obs.created,
            certainty=obs.certainty,
            origin=obs.origin,
            locked=False,
        )
        plan.propose(row, action=DEMOTE, reason=f"not recalled in {weeks} weeks")


# -- schedule state and the one-pass-at-a-time lock -----------------------------------------
def _state_path() -> Path:
    return config.data_dir() / "state" / "consolidation.json"


def _state_read() -> dict[str, Any]:
    try:
        data = json.loads(_state_path().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _state_write(data: dict[str, Any]) -> None:
    path = _state_path()
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    config.write_atomic(path, json.dumps(data, indent=1).encode())


def _parse_time(raw: object) -> datetime | None:
    if not isinstance(raw, str):
        return None
    try:
        return datetime.fromisoformat(raw)
    except ValueError:
        return None


def last_pass() -> datetime | None:
    return _parse_time(_state_read().get("last_pass"))


def pass_due(now: datetime | None = None) -> bool:
    """The background pass is due: CLAUDE_MEM_CONSOLIDATE_EVERY_HOURS since the last one."""
    last = last_pass()
    hours = max(1, config.consolidate_every_hours())
    return last is None or (now or timezone.now()) - last >= timedelta(hours=hours)


@contextlib.contextmanager
def _exclusive(dry_run: bool) -> Iterator[bool]:
    """One applying pass at a time (the scheduled one, the page's, the CLI's); a dry run
    changes nothing and never waits."""
    if dry_run:
        yield True
        return
    path = _state_path().with_suffix(".lock")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with locks.exclusive(path, wait=False) as held:
        yield held is not None
