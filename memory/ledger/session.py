"""One session's ledger, line by line, for its page: every gate decision (refused, refused
re-read, passed on retry, passed with context), what each refusal led to, the memory tools
the agent called and the injections (SessionStart index, prompt-time recall, failure recall),
each with its tokens and its money at the session's model."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from memory.ledger import session_model
from memory.ledger.prices import input_usd
from memory.models import LedgerEntry, Session
from memory.projects import relative_path

OUTCOME_LABELS: dict[str, str] = {
    LedgerEntry.Outcome.NOTHING: "nothing more (the timeline was enough)",
    LedgerEntry.Outcome.READ_AGAIN: "read again: the refusal was overhead",
    LedgerEntry.Outcome.GET_OBSERVATIONS: "get_observations instead",
    LedgerEntry.Outcome.SMART_OUTLINE: "smart_outline instead",
    LedgerEntry.Outcome.SMART_UNFOLD: "smart_unfold instead",
    LedgerEntry.Outcome.REPEATED: "the same error came back: the recall did not spare it",
}


@dataclass(frozen=True)
class SessionLine:
    """One decision or injection: `saved` is what it spared the model (negative: it cost)."""

    when: datetime
    kind: str  # a LedgerEntry.Kind
    label: str  # "refused", "re-read refused", "passed on retry", "passed with context", …
    path: str  # project-relative where the row names a file
    shown: int
    avoided: int
    outcome: str  # what a refusal led to, in words ("" for other rows)
    usd: float  # saved in USD at the session's model (negative: cost)

    @property
    def saved(self) -> int:
        return self.avoided - self.shown


@dataclass
class SessionLedger:
    model: str
    model_known: bool
    lines: list[SessionLine] = field(default_factory=list)

    def _sum(self, *kinds: str) -> int:
        return sum(line.saved for line in self.lines if not kinds or line.kind in kinds)

    @property
    def gate_saved(self) -> int:
        kinds = (
            LedgerEntry.Kind.GATE_DENY,
            LedgerEntry.Kind.GATE_RETRY,
            LedgerEntry.Kind.GATE_CONTEXT,
            LedgerEntry.Kind.MEMORY_TOOL,
        )
        return self._sum(*kinds)

    @property
    def injected(self) -> int:
        return sum(line.shown for line in self.lines if line.kind == LedgerEntry.Kind.INJECTION)

    @property
    def net(self) -> int:
        return self._sum()

    @property
    def usd_net(self) -> float:
        return sum(line.usd for line in self.lines)

    @property
    def summary(self) -> str:
        """The ledger in one or two plain sentences for the session page ("cmem stopped 3
        full re-reads of files it already knew"), instead of its internal labels."""
        refusals = [line for line in self.lines if line.kind == LedgerEntry.Kind.GATE_DENY]
        read_anyway = sum(1 for line in refusals if line.outcome == _READ_AGAIN_LABEL)
        tools = sum(1 for line in self.lines if line.kind == LedgerEntry.Kind.MEMORY_TOOL)
        added = sum(1 for line in self.lines if line.kind == LedgerEntry.Kind.INJECTION)
        advised = sum(1 for line in self.lines if line.kind == LedgerEntry.Kind.GATE_CONTEXT)
        actions = []
        if refusals:
            actions.append(
                f"stopped {_count(len(refusals), 'full re-read')} of files it already knew"
                + (f" (the agent read {read_anyway} of them anyway)" if read_anyway else "")
            )
        if advised:
            actions.append(f"let {_count(advised, 'read')} through with a note of what it knew")
        if tools:
            actions.append(f"answered {_count(tools, 'memory lookup')}")
        if added:
            actions.append(f"added its notes to the agent's context {_times(added)}")
        if not actions:
            return ""
        listed = ", ".join(actions[:-1]) + " and " + actions[-1] if len(actions) > 1 else actions[0]
        return f"cmem {listed}."


_READ_AGAIN_LABEL = OUTCOME_LABELS[LedgerEntry.Outcome.READ_AGAIN]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def _label(kind: str, detail: str) -> str:
    if kind == LedgerEntry.Kind.GATE_DENY:
        return "re-read refused" if detail == "reread" else "refused"
    if kind == LedgerEntry.Kind.GATE_RETRY:
        return "passed on retry"
    if kind == LedgerEntry.Kind.GATE_CONTEXT:
        return "passed with context"
    if kind == LedgerEntry.Kind.MEMORY_TOOL:
        return f"memory tool {detail}" if detail else "memory tool"
    if kind == LedgerEntry.Kind.INJECTION:
        if detail == "prompt_recall":
            return "prompt-time recall"
        if detail == "failure_recall":
            return "failure recall"
        if detail == "failure_recall_held":
            return "failure recall held back (not paying in this project)"
        source = detail.partition(":")[2]
        return f"SessionStart index ({source})" if source else "SessionStart index"
    return kind


def session_ledger(*, session: Session) -> SessionLedger:
    """The session's ledger rows in order (the observer's batches are left to Stats)."""
    model = session_model(session)
    out = SessionLedger(model=model, model_known=bool(session.model))
    rows = (
        session.ledger.exclude(kind=LedgerEntry.Kind.OBSERVER)
        .order_by("created", "pk")
        .values_list(
            "created", "kind", "detail", "path", "tokens_shown", "tokens_avoided", "outcome"
        )
    )
    for created, kind, detail, path, shown, avoided, outcome in rows:
        out.lines.append(
            SessionLine(
                when=created,
                kind=kind,
                label=_label(kind, detail),
                # A failure recall's `path` is its error's key, not a file.
                path=relative_path(path, session.project_root)
                if path and not path.startswith("error:")
                else "",
                shown=shown,
                avoided=avoided,
                outcome=OUTCOME_LABELS.get(outcome, outcome)
                if kind == LedgerEntry.Kind.GATE_DENY or outcome == LedgerEntry.Outcome.REPEATED
                else "",
                usd=input_usd(model, avoided) - input_usd(model, shown),
            )
        )
    return out
