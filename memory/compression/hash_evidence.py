"""Changes only a file's hash reveals, across batches and sessions.

Capture hashes every file a Read returns (`cmem_files`). When a batch reads a file whose
hash differs from the last one cmem knew from before the batch (an earlier batch's or an
earlier session's observation file row, or another session's file view), the file changed
in between, and no edit cmem saw explains it:
- if a shell command of the same session ran since that last known hash (in an earlier
  batch; one in the same batch is handled by `tooluse.hash_changes`), the change is put down
  to it: "Changed X (Ran regen.py)";
- else the file was changed outside the session (an editor, `git pull`, another agent, a
  change between two sessions): "X changed outside the session".
Either way it is stored as its own `change` observation with X in files_modified and the
new hash on its file row, so the gate, My Work's "Done" line and the file's history all
say the file changed. Earlier observations are never rewritten (docs/benchmarks/offline.md).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memory.compression.offline_shell import purpose
from memory.compression.offline_text import joined, t
from memory.compression.parse import ParsedObservation
from memory.compression.tooluse import SHELL_TOOLS, ToolUse, sanitize
from memory.models import Event, FileView, ObservationFile, Session


def _known_before(
    session: Session, path: str, abs_path: str, before: datetime | None
) -> tuple[str, datetime | None] | None:
    """(hash, when) of the newest fact cmem holds about `path` from before `before`; None
    when it holds none, or when the newest says the file was modified with no hash (already
    recorded as a change, so nothing to compare)."""
    # Team mode: only the session owner's own facts (memory/team/scope.py); a teammate's
    # hash of the file must not turn into a "changed" note in this user's memory.
    rows = ObservationFile.objects.filter(
        project=session.project, path=path, observation__session__owner_id=session.owner_id
    )
    views = (
        FileView.objects.filter(path=abs_path, session__owner_id=session.owner_id)
        .exclude(session=session)
        .exclude(content_hash="")
    )
    if before is not None:
        rows = rows.filter(created__lt=before)
        views = views.filter(seen__lt=before)
    row = rows.order_by("-created", "-pk").only("content_hash", "role", "created").first()
    view = views.order_by("-seen").only("content_hash", "seen").first() if abs_path else None
    found: list[tuple[datetime, str]] = []
    if row is not None:
        if not row.content_hash and row.role == ObservationFile.Role.MODIFIED:
            if view is None or view.seen <= row.created:
                return None
        elif row.content_hash:
            found.append((row.created, row.content_hash))
    if view is not None:
        found.append((view.seen, view.content_hash))
    if not found:
        return None
    when, digest = max(found, key=lambda item: item[0])
    return digest, when


def prior_hashes(session: Session, uses: list[ToolUse]) -> dict[str, tuple[str, datetime | None]]:
    """path -> (last known hash, when) from before the batch, for each file the batch reads."""
    out: dict[str, tuple[str, datetime | None]] = {}
    first = uses[0].created if uses else None
    for use in uses:
        for fact in use.files:
            path = str(fact.get("path") or use.rel(str(fact.get("abs", ""))))
            if not path or path in out or not fact.get("sha256"):
                continue
            known = _known_before(session, path, str(fact.get("abs") or ""), first)
            if known is not None:
                out[path] = known
    return out


def _culprit(
    session: Session, *, since: datetime | None, until: datetime | None, batch: set[int], root: str
) -> ToolUse | None:
    """The newest shell command of this session between the last known hash and the read."""
    events = Event.objects.filter(
        session=session, kind=Event.Kind.OBSERVATION, tool_name__in=SHELL_TOOLS
    ).exclude(pk__in=batch)
    if since is not None:
        events = events.filter(created__gt=since)
    if until is not None:
        events = events.filter(created__lt=until)
    event = events.order_by("-created", "-pk").first()
    return ToolUse.from_event(event, n=0, root=root) if event is not None else None


def _cause(culprit: ToolUse) -> str:
    """The agent's own description of the command, else what the program does."""
    said = culprit.tool_input.get("description")
    return said.strip()[:90] if isinstance(said, str) and said.strip() else purpose(culprit)[0]


def hash_change_observations(
    session: Session,
    uses: list[ToolUse],
    unexplained: list[tuple[ToolUse, str, datetime | None]],
    *,
    root: str,
) -> list[ParsedObservation]:
    """One `change` observation per read that showed files changed since cmem last saw them."""
    batch = {u.event_pk for u in uses}
    grouped: dict[int, tuple[ToolUse, list[str], list[str]]] = {}
    for use, path, since in unexplained:
        culprit = _culprit(session, since=since, until=use.created, batch=batch, root=root)
        if culprit is not None and path in culprit.modified_paths:
            continue  # that command's own observation already says it changed the file
        entry = grouped.setdefault(use.n, (use, [], []))
        entry[1].append(path)
        entry[2].append(_cause(culprit) if culprit is not None else "")
    out: list[ParsedObservation] = []
    for use, paths, causes in grouped.values():
        cause = next((c for c in causes if c), "")
        shown = joined(paths)
        title = (
            t("shell_hash", paths=shown, purpose=cause)
            if cause
            else t("changed_outside", paths=shown)
        )
        facts: list[Any] = [
            f"{p}: content hash differs from the one cmem last recorded." for p in paths
        ]
        facts.append(
            f"Put down to an earlier shell command of this session ({cause})."
            if cause
            else "No tool use cmem saw changed it: changed outside the session."
        )
        out.append(
            ParsedObservation(
                type="change",
                title=sanitize(title[:160]),
                subtitle=sanitize(f"{use.name} of {shown} showed new content"),
                facts=[sanitize(str(f)) for f in facts],
                narrative=sanitize(f"{title}. A later {use.name} showed the new content."),
                concepts=["what-changed"],
                files_modified=list(paths),
                uses=[use.n],
                evidence_modified=list(paths),
            )
        )
    return out
