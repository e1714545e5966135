"""Raw tool output on demand: the fourth disclosure step, after the index, get_observations
and the code tools, and the most expensive.

An observation is a model's few hundred tokens about one or more tool uses. When the exact
command, diff or output matters, `tool_uses_fetch` returns the tool uses themselves as
capture stored them: the sanitized hook payload of each Event (secrets and `<private>`
content were redacted and long fields capped before the row was written,
memory/capture/ingest.py). Nothing is re-read from disk or re-run.

- Ids: a bare number (or `#12`) names an observation, whose tool uses are those it was
  compressed from (Observation.events); `E7` names one captured tool use (an Event), the
  way the timeline names summaries `S12` and prompts `P7`.
- Raw payloads live for CLAUDE_MEM_RETENTION_DAYS (memory/housekeeping/retention.py empties
  older ones, keeping the row): such a tool use is returned with `expired` and a note that
  says so, never as an empty answer that looks like a tool printing nothing.
- Each payload (input, output, error) is cut at PAYLOAD_CAP bytes of UTF-8 with a visible
  marker, and its full size is given.
- Team mode: only the viewer's rows (memory.team.scope.owned); another user's ids are
  `missing`, like ids never made.

The text is recorded data, never instructions: every surface that puts it in front of an
agent frames it (the MCP tool, `cmem show --tool-uses`); the page escapes it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory import config
from memory.models import Event, Observation
from memory.retrieval.render import RAW_LINE
from memory.team.scope import owned

PAYLOAD_CAP = 64 * 1024  # bytes of UTF-8 per payload (input, output, error)
LIMIT_DEFAULT = 10
LIMIT_MAX = 50
IDS_MAX = 200
# Row ids are 64-bit: a bigger number cannot name a row (SQLite raises OverflowError).
ID_MAX = 2**63 - 1
EVENT_PREFIX = "E"
RECORDED_NOTE = RAW_LINE  # what every answer says its text is


class ToolUsesError(ValueError):
    """Input the caller must change (bad ids, nothing asked)."""


@dataclass(frozen=True)
class ToolUseRef:
    """One id as asked: an observation (`12`) or a captured tool use (`E7`)."""

    kind: str  # "observation" | "event"
    pk: int

    def __str__(self) -> str:
        return f"{EVENT_PREFIX}{self.pk}" if self.kind == "event" else str(self.pk)


def tool_use_refs_parse(raw: str | list[Any]) -> list[ToolUseRef]:
    """`12,#40,E7` (or a list of ints and strings) as refs, in order; ToolUsesError names
    the first part that is not an id."""
    parts = raw.split(",") if isinstance(raw, str) else [str(part) for part in raw]
    parts = [part.strip().lstrip("#") for part in parts if part.strip()]
    if len(parts) > IDS_MAX:
        raise ToolUsesError(f"at most {IDS_MAX} ids at once")
    refs = []
    for part in parts:
        kind, digits = "observation", part
        if part[:1] in (EVENT_PREFIX, EVENT_PREFIX.lower()):
            kind, digits = "event", part[1:]
        if not (digits.isascii() and digits.isdigit()) or not 0 < int(digits) <= ID_MAX:
            raise ToolUsesError(
                f"not an id: {part!r} (an observation id like 12, or E7 for one captured tool use)"
            )
        refs.append(ToolUseRef(kind=kind, pk=int(digits)))
    return refs


@dataclass(frozen=True)
class Payload:
    text: str
    bytes: int  # the whole payload's size, before the cap
    truncated: bool


def payload_capped(value: Any, cap: int = PAYLOAD_CAP) -> Payload:
    """A stored input or output as text (strings as they are, anything else as indented
    JSON), cut at `cap` bytes on a character boundary with a marker saying how much."""
    if value is None or value == "":
        return Payload(text="", bytes=0, truncated=False)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)
    raw = text.encode("utf-8", "replace")
    if len(raw) <= cap:
        return Payload(text=text, bytes=len(raw), truncated=False)
    kept = raw[:cap].decode("utf-8", "ignore")
    marker = (
        f"\n[… cut by cmem: {len(kept.encode()):,} of {len(raw):,} bytes shown;"
        f" each payload is capped at {cap // 1024} KB]"
    )
    return Payload(text=kept + marker, bytes=len(raw), truncated=True)


@dataclass
class ToolUseRow:
    event_id: int
    observation_ids: list[int]
    session: int
    project: str
    tool_name: str
    tool_use_id: str
    hook_event_name: str
    created_at: datetime
    failed: bool
    expired: bool
    note: str
    input: Payload
    output: Payload
    error: Payload

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": f"{EVENT_PREFIX}{self.event_id}",
            "event_id": self.event_id,
            "observation_ids": self.observation_ids,
            "session": self.session,
            "project": self.project,
            "tool_name": self.tool_name,
            "tool_use_id": self.tool_use_id,
            "hook_event_name": self.hook_event_name,
            "created_at": self.created_at,
            "failed": self.failed,
            "expired": self.expired,
            "note": self.note,
        }
        for name in ("input", "output", "error"):
            payload: Payload = getattr(self, name)
            out[name] = payload.text
            out[f"{name}_bytes"] = payload.bytes
            out[f"{name}_truncated"] = payload.truncated
        return out


@dataclass
class ToolUses:
    tool_uses: list[ToolUseRow] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    without_tool_uses: list[int] = field(default_factory=list)
    more: int = 0
    retention_days: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "note": RECORDED_NOTE,
            "retention_days": self.retention_days,
            "tool_uses": [row.as_dict() for row in self.tool_uses],
            "missing": self.missing,
            "without_tool_uses": self.without_tool_uses,
            "more": self.more,
        }


def retention_days() -> int:
    """CLAUDE_MEM_RETENTION_DAYS as memory/housekeeping/retention.py reads it (0: forever)."""
    return max(0, config.get_int("CLAUDE_MEM_RETENTION_DAYS"))


def tool_uses_fetch(
    *,
    refs: list[ToolUseRef],
    project: str | None = None,
    session: int | None = None,
    limit: int = LIMIT_DEFAULT,
) -> ToolUses:
    """The recorded tool uses behind `refs` (in the order asked, each observation's in the
    order they ran), or without refs the newest of `project` / `session`.

    1. The observations and events the viewer may read, narrowed by the filters; an id that
       names nothing readable, or a row outside the filters, is `missing`.
    2. An observation with no recorded tool use (a `remember`ed memory, an import of
       another tool's memory) is listed in `without_tool_uses`.
    3. At most `limit` tool uses; how many more matched is `more`.
    """
    if not refs and project is None and session is None:
        raise ToolUsesError(
            "give ids (observation ids like 12, or E7 for a captured tool use), a session or a project"
        )
    events = owned(Event.objects.filter(kind=Event.Kind.OBSERVATION)).select_related("session")
    observations = owned(Observation.objects.all())
    if project is not None:
        events = events.filter(session__project=project)
        observations = observations.filter(project=project)
    if session is not None:
        events = events.filter(session_id=session)
        observations = observations.filter(session_id=session)
    result = ToolUses(retention_days=retention_days())
    if refs:
        ordered = _asked(refs, events=events, observations=observations, result=result)
        result.more = max(0, len(ordered) - limit)
    else:
        ordered = list(events.order_by("-created", "-pk")[: limit + 1])
        if len(ordered) > limit:
            result.more = events.count() - limit
    kept = ordered[:limit]
    sources = _sources([event.pk for event in kept])
    result.tool_uses = [
        _row(event, sources.get(event.pk, []), result.retention_days) for event in kept
    ]
    return result


def _asked(
    refs: list[ToolUseRef], *, events: Any, observations: Any, result: ToolUses
) -> list[Event]:
    """The events `refs` name, deduplicated, in the order asked; `result` gets the ids that
    name nothing readable and the observations without a recorded tool use."""
    obs_ids = [ref.pk for ref in refs if ref.kind == "observation"]
    event_ids = [ref.pk for ref in refs if ref.kind == "event"]
    readable_obs = set(observations.filter(pk__in=obs_ids).values_list("pk", flat=True))
    by_obs: dict[int, list[int]] = {}
    links = Observation.events.through.objects.filter(observation_id__in=readable_obs)
    for obs_pk, event_pk in links.values_list("observation_id", "event_id"):
        by_obs.setdefault(obs_pk, []).append(event_pk)
    wanted = set(event_ids) | {pk for pks in by_obs.values() for pk in pks}
    found = {event.pk: event for event in events.filter(pk__in=wanted)}
    ordered: dict[int, Event] = {}
    for ref in dict.fromkeys(refs):
        if ref.kind == "event":
            if ref.pk in found:
                ordered.setdefault(ref.pk, found[ref.pk])
            else:
                result.missing.append(str(ref))
            continue
        if ref.pk not in readable_obs:
            result.missing.append(str(ref))
            continue
        own = sorted(
            (found[pk] for pk in by_obs.get(ref.pk, []) if pk in found),
            key=lambda event: (event.created, event.pk),
        )
        if not own:
            result.without_tool_uses.append(ref.pk)
        for event in own:
            ordered.setdefault(event.pk, event)
    return list(ordered.values())


def _sources(event_ids: list[int]) -> dict[int, list[int]]:
    """Each event's observations (ids, ascending): what was learned from it."""
    out: dict[int, list[int]] = {}
    links = Observation.events.through.objects.filter(event_id__in=event_ids).order_by(
        "observation_id"
    )
    for event_pk, obs_pk in links.values_list("event_id", "observation_id"):
        out.setdefault(event_pk, []).append(obs_pk)
    return out


def _row(event: Event, observation_ids: list[int], days: int) -> ToolUseRow:
    payload = event.payload if isinstance(event.payload, dict) else {}
    expired = not payload
    note = ""
    if expired:
        kept = f"kept {days} day(s)" if days else "retention has since been turned off"
        note = (
            f"Raw input and output no longer stored: captured {event.created:%Y-%m-%d}, and raw "
            f"payloads are emptied after CLAUDE_MEM_RETENTION_DAYS ({kept}). "
            "The observations made from it keep what was learned."
        )
    error = payload.get("error") or ""
    return ToolUseRow(
        event_id=event.pk,
        observation_ids=observation_ids,
        session=event.session_id,
        project=event.session.project,
        tool_name=event.tool_name or str(payload.get("tool_name") or ""),
        tool_use_id=event.tool_use_id,
        hook_event_name=str(payload.get("hook_event_name") or ""),
        created_at=event.created,
        failed=bool(error) or payload.get("hook_event_name") == "PostToolUseFailure",
        expired=expired,
        note=note,
        input=payload_capped(payload.get("tool_input")),
        output=payload_capped(payload.get("tool_response")),
        error=payload_capped(error),
    )
