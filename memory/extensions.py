"""The seam through which `memory` reaches the apps built on it, today `deliverables`.

The contract:

- `memory` never imports `deliverables` (or any app built on memory), not even lazily.
  `deliverables` imports `memory` freely and plugs itself in here, once, from its
  `AppConfig.ready()`. memory works unchanged with nothing plugged in (the counts are 0,
  the session page shows prompts, observations and summaries only, exports carry no
  deliverables).
- Events memory announces have a receiver list here. memory sends them; apps connect.
  `turn_finished` is sent at Stop, inside the Stop's transaction, once the summary request
  is stored (`session=`, the `Session`; `event=`, the `HookEvent`). Each receiver runs in a
  savepoint of its own: one that raises is rolled back and logged, and fails neither the
  Stop nor the other receivers. `tool_recorded` is sent the same way when a tool use is
  stored (PostToolUse), once per tool use, to the receivers whose `wants(event)` (given at
  connect) is true: the filter runs before the savepoint, so a tool use no receiver wants
  costs no SAVEPOINT/RELEASE on ingest's hot path. (A plain list, not a
  `django.dispatch.Signal`: a signal's public API cannot give each receiver its own savepoint.)
- Rows an app keeps per session, which memory shows (stats, the session page) and carries
  (export and import), are described by a `SessionPart` the app registers with
  `session_part_register()`. memory calls its callables and knows nothing else about it.

Later deliverable features keep to this. The MCP tool `work_state_write` is registered by
`deliverables` into memory.retrieval.mcp_registry, which memory's MCP server reads (a
stdlib module, as the server imports no Django); mcp_server never imports deliverables. A list both apps
share, such as the secret locations that capture must not copy, lives in memory (it is a
capture and privacy concern) and `deliverables` imports it from there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db import transaction

if TYPE_CHECKING:
    from memory.agents.base import HookEvent
    from memory.models import Prompt, Session

log = logging.getLogger(__name__)

TurnFinished = Callable[..., object]  # called as receiver(session=..., event=...)
_turn_finished: list[TurnFinished] = []


def turn_finished_connect(receiver: TurnFinished) -> None:
    """Called from an app's `AppConfig.ready()`; connecting the same receiver twice is a no-op."""
    if receiver not in _turn_finished:
        _turn_finished.append(receiver)


def turn_finished_disconnect(receiver: TurnFinished) -> None:
    if receiver in _turn_finished:
        _turn_finished.remove(receiver)


def turn_finished_send(*, session: Session, event: HookEvent) -> None:
    """Tell the connected apps a turn ended; each receiver in its own savepoint."""
    for receiver in list(_turn_finished):
        try:
            with transaction.atomic():
                receiver(session=session, event=event)
        except Exception:
            log.exception("turn_finished receiver %r failed for session %s", receiver, session.pk)


ToolRecorded = Callable[..., object]  # called as receiver(session=..., event=...)
ToolWanted = Callable[["HookEvent"], bool]
# receiver -> its filter (None: every tool use); a dict keeps the connect order.
_tool_recorded: dict[ToolRecorded, ToolWanted | None] = {}


def tool_recorded_connect(receiver: ToolRecorded, *, wants: ToolWanted | None = None) -> None:
    """Called from an app's `AppConfig.ready()`; connecting the same receiver twice is a
    no-op. `wants(event)`: whether the receiver cares about this tool use (cheap, no
    database); only those it wants are sent to it."""
    if receiver not in _tool_recorded:
        _tool_recorded[receiver] = wants


def tool_recorded_disconnect(receiver: ToolRecorded) -> None:
    _tool_recorded.pop(receiver, None)


def tool_recorded_send(*, session: Session, event: HookEvent) -> None:
    """A tool use was stored (PostToolUse, inside its transaction, once per tool_use_id);
    deliverables records a `work_state_write` call's attachments here. Each receiver that
    wants the event, in its own savepoint, as for turn_finished."""
    for receiver, wants in list(_tool_recorded.items()):
        if wants is not None and not wants(event):
            continue
        try:
            with transaction.atomic():
                receiver(session=session, event=event)
        except Exception:
            log.exception("tool_recorded receiver %r failed for session %s", receiver, session.pk)


@dataclass(frozen=True)
class SessionPart:
    """Rows another app keeps per session, as memory's pages, stats and exports see them."""

    # The key under /api/stats, in a session page's turn and in an export's session.
    name: str
    # The singular noun an import report counts them by ("deliverable").
    noun: str
    # How many rows, of one project when named (/api/stats).
    count: Callable[[str | None], int]
    # The session page: rows per prompt pk, in the order to show them.
    by_prompt: Callable[[Session], dict[int, list[Any]]]
    # The template that renders one turn's rows on the session page (gets `items`).
    turn_template: str
    # Export: JSON-ready rows per session pk, for the given sessions.
    export: Callable[[list[Session]], dict[int, list[dict[str, Any]]]]
    # Import: store a session's rows (prompts by number); one "created" flag per row.
    import_rows: Callable[[Session, list[dict[str, Any]], dict[int, Prompt]], Iterable[bool]]


_parts: dict[str, SessionPart] = {}


def session_part_register(part: SessionPart) -> None:
    """Called from an app's `AppConfig.ready()`; registering a name again replaces it."""
    _parts[part.name] = part


def session_parts() -> list[SessionPart]:
    """The registered parts, in registration order."""
    return list(_parts.values())


def session_part_count(name: str, *, project: str | None = None) -> int:
    """The rows of one part (0 when no app registered it)."""
    part = _parts.get(name)
    return part.count(project) if part else 0


@dataclass(frozen=True)
class FileStore:
    """The bytes behind rows another app keeps (deliverables' files), for `cmem sync`:
    memory carries the rows' metadata as Markdown and, when allowed, these bytes beside it."""

    # The Markdown document kind whose rows have bytes ("deliverable").
    kind: str
    # A row's stored file by global id: (path, sha256, size), None when the row or its file is gone.
    file_of: Callable[[str], tuple[Path, str, int] | None]
    # (gid, sha256) of the rows whose file is not on this machine (synced metadata only).
    missing: Callable[[], list[tuple[str, str]]]
    # Store a row's bytes (checked against its sha256); True when written.
    put: Callable[[str, bytes], bool]


_file_stores: dict[str, FileStore] = {}


def file_store_register(store: FileStore) -> None:
    """Called from an app's `AppConfig.ready()`; registering a kind again replaces it."""
    _file_stores[store.kind] = store


def file_store(kind: str) -> FileStore | None:
    return _file_stores.get(kind)


SessionEnded = Callable[..., object]  # called as receiver(session_pk=...)
_session_ended: list[SessionEnded] = []


def session_ended_connect(receiver: SessionEnded) -> None:
    """Called from an `AppConfig.ready()` (memory's own: the automatic sync at SessionEnd);
    connecting the same receiver twice is a no-op."""
    if receiver not in _session_ended:
        _session_ended.append(receiver)


def session_ended_disconnect(receiver: SessionEnded) -> None:
    if receiver in _session_ended:
        _session_ended.remove(receiver)


def session_ended_send(*, session_pk: int) -> None:
    """A session ended (SessionEnd, after its commit). A receiver that raises is logged and
    never fails the hook: what they start (a sync) is background work."""
    for receiver in list(_session_ended):
        try:
            receiver(session_pk=session_pk)
        except Exception:
            log.exception("session_ended receiver %r failed for session %s", receiver, session_pk)
