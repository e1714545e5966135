"""The SessionStart index (docs/reference/source-rules.md): a compact map of a project's past work,
injected as `additionalContext` on startup, clear and compact.

On resume (Claude Code), never the index again: the conversation still holds the one it was
given, and the seed's rule is to leave a resumed conversation as it is. But other sessions
may have worked on the project meanwhile, so a resume gets only what is new since this
session's own last index (other sessions' rows, at most RESUME_ROWS), and nothing at all
when nothing is new. Context added at resume is appended after the history, so the cached
prefix of the conversation stays valid either way. File views are kept: the model still
holds what it read.

Layout, chosen for tokens (every row is paid on every session start):

    # [proj] recent context, 2026-08-19 3:25pm PDT       <- rendered fresh on every call
    Legend: ◎session ●bugfix ◆feature …
    Rows: ID TIME TYPE TITLE ~tokens to fetch, under the file they touched. …
    Pinned:                                              <- pinned memories, within a budget
    40112 ⚖ Releases are cut from main only ~40 [written by you]
    ### Aug 18, 2026                                     <- days oldest first
    S812 10:02a ◎ Add retry to webhook sender            <- that day's session requests
    src/webhooks/sender.py:                              <- file groups, first seen first
    42290 10:05a ○ Webhook sender uses fixed 5s timeout ~85
    42291 " ● Fixed retry storm on 429 responses ~120    <- `"`: same time as the row above
    42295 10:30a ⚖ Retry at most 3 times ~60 [agent-written] replaces #42280
    …
    Last summary (S815, Aug 19 3:02p): <request>
    Investigated: … / Learned: … / Completed: … / Next steps: …

Icons are BMP characters only: Claude Code may cut injected text in the middle of a UTF-16
surrogate pair, which breaks the session (claude-mem #2787). The text never exceeds
MAX_CHARS UTF-16 units (Claude Code's cap) and is only ever shortened by whole rows.

Only what is true now is shown (context_rows: current rows, not demoted, of this project
and the user's all-projects memories), each with its currency tags (`[agent-written]`,
`[corrected]`, `[hypothesis]`, …) and, where it replaced other rows, which ones.

Everything below the header line is cached per project (ContextCache); the header, with
the current time, and the observer-health line are rendered on every call.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import datetime, tzinfo

from django.db import IntegrityError, transaction

from memory import clock, config
from memory.agents.base import HookEvent, HookResult
from memory.agents.tool_names import ToolNames, tool_names
from memory.briefing import framing
from memory.briefing.context_rows import (
    ObsRow,
    SummaryRow,
    file_rows,
    new_since,
    newest_stamp,
    pinned_observations,
    recent_observations,
    recent_summaries,
    replaced_rows,
    rows_of,
)
from memory.briefing.file_views import file_views_reset, session_ensure
from memory.compression.health import observer_health_line
from memory.ledger import ledger_record
from memory.models import (
    ContextCache,
    LedgerEntry,
    ObservationFile,
    Session,
    estimate_tokens,
)
from memory.projects import is_excluded, project_for_cwd, relative_path
from memory.runtime.compiled_sql import CompiledInsert, CompiledQuery, upsert_supported
from memory.team import scope

MAX_CHARS = 10_000  # Claude Code cuts additionalContext here (JS string length: UTF-16 units)
FORMAT_VERSION = "3"  # bump when the layout changes: cached bodies are then re-rendered
SOURCES = {"startup", "clear", "compact"}
RESUME = "resume"
# A resume's "new since" block: rows shown at most (older ones are one search away).
RESUME_ROWS = 20
TITLE_MAX = 120
SUMMARY_FIELD_MAX = 400

ICONS = {
    "bugfix": "●",
    "feature": "◆",
    "refactor": "↻",
    "change": "✓",
    "discovery": "○",
    "decision": "⚖",
    "security_alert": "⚠",
    "security_note": "⚷",
    "sensitive": "⊘",
}
SESSION_ICON = "◎"
OTHER_ICON = "•"
LEGEND_ORDER = [("session", SESSION_ICON), *ICONS.items(), ("other", OTHER_ICON)]
HOWTO_TEXT = (
    "Rows: ID TIME TYPE TITLE ~tokens to fetch, under the file they touched. "
    "Details: {get}([IDs]); raw tool output (costliest): {raw}([IDs]); "
    "older work: {search}(query), {timeline}(anchor=ID). "
    "Keep decisions/preferences: {remember}; fix a wrong memory: {correct}."
)
WELCOME_TEXT = (
    "No memory of this project yet. cmem records this session's work; from the next session on, "
    "an index of it appears here. Search past work any time with {search}(query)."
)
# The cached index names the tools bare; each SessionStart swaps in the agent's own names.
HOWTO = HOWTO_TEXT.format(
    get="get_observations",
    raw="get_tool_uses",
    search="search",
    timeline="timeline",
    remember="remember",
    correct="memory_correct",
)
WELCOME = WELCOME_TEXT.format(search="search")


# Characters the body leaves free for those longer names (six names, ~33 more each).
NAMES_ROOM = 200
_STATED = re.compile(r"This index: ~([\d,]+)t\.")


def tools_named(text: str, names: ToolNames) -> str:
    """The index with cmem's tools called as this agent calls them; its stated cost follows."""
    named = {
        "get": names.get_observations,
        "raw": names.get_tool_uses,
        "search": names.search,
        "timeline": names.timeline,
        "remember": names.remember,
        "correct": names.memory_correct,
    }
    out = text.replace(HOWTO, HOWTO_TEXT.format(**named)).replace(
        WELCOME, WELCOME_TEXT.format(search=names.search)
    )
    grown = len(out) - len(text)
    if not grown:
        return out

    def restate(match: re.Match[str]) -> str:
        return f"This index: ~{int(match.group(1).replace(',', '')) + (grown + 3) // 4:,}t."

    return _STATED.sub(restate, out, count=1)


NO_FILE = "(no file)"
DITTO = '"'  # same time as the row above


def utf16_len(text: str) -> int:
    """Length as Claude Code (JavaScript) counts it: astral characters take two units."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def context_for_hook(*, event: HookEvent) -> HookResult:
    """SessionStart.

    1. Only startup, clear and compact (resume keeps what the conversation already holds);
       nothing at all for excluded projects.
    2. clear/compact: the model lost its file views, so forget them; re-render the index.
    3. Inject header + cached index, and book its tokens in the ledger; nothing when both
       CLAUDE_MEM_CONTEXT_OBSERVATIONS and CLAUDE_MEM_CONTEXT_SESSION_COUNT are 0.
    """
    source = (event.source or "startup").lower()
    resuming = source == RESUME and event.platform == "claude-code"
    if source not in SOURCES and not resuming:
        return HookResult()
    project = project_for_cwd(event.cwd)
    if is_excluded(event.cwd, project):
        return HookResult()
    settings = config.load()
    session = session_ensure(event=event, project=project)
    injecting = any(
        config.get_int(name, settings) > 0
        for name in ("CLAUDE_MEM_CONTEXT_OBSERVATIONS", "CLAUDE_MEM_CONTEXT_SESSION_COUNT")
    )
    if source in {"clear", "compact"}:
        file_views_reset(session=session)
        ContextCache.invalidate(project=project.name)
    if not injecting:
        return HookResult()  # both counts at 0: the user turned injection off (claude-mem #2875)
    if resuming:
        text = resume_text(session=session, project=project.name, settings=settings)
        if not text:
            return HookResult()  # nothing new: the resumed conversation stays as it was
    else:
        text = context_text(
            project=project.name, root=project.root, settings=settings, platform=event.platform
        )
    ledger_record(
        kind=LedgerEntry.Kind.INJECTION,
        session=session,
        project=project.name,
        shown=text,
        detail=f"session_start:{source}",
    )
    return HookResult(context=text)


def resume_text(*, session: Session, project: str, settings: dict[str, str]) -> str:
    """What other sessions added to `project` since `session` was last given an index (or
    started), bounded; "" when nothing is new."""
    shown_at = (
        LedgerEntry.objects.filter(
            session=session, kind=LedgerEntry.Kind.INJECTION, detail__startswith="session_start:"
        )
        .order_by("-created")
        .values_list("created", flat=True)
        .first()
    )
    since = shown_at or session.started
    observations, summaries = new_since(
        project=project, since=since, session_pk=session.pk, limit=RESUME_ROWS
    )
    if not observations and not summaries:
        return ""
    zone = clock.local_zone(settings)
    more = len(observations) > RESUME_ROWS
    replaced = replaced_rows([o.pk for o in observations[:RESUME_ROWS]])
    lines = [
        f"# [{project}] new since this conversation's index "
        f"({clock.stamp(clock.to_local(since, zone))}), from other sessions"
    ]
    for o in reversed(observations[:RESUME_ROWS]):
        lines.append(
            f"{o.pk} {clock.short_time(clock.to_local(o.created, zone))} {_obs_text(o, replaced)}"
        )
    if more:
        lines.append("Older new rows are left out; cmem's search tool finds them.")
    lines += [_last_summary(s, zone) for s in reversed(summaries)]
    return _fit_lines("\n".join([framing.NOTES_LINE, *lines]), MAX_CHARS)


def context_text(
    *,
    project: str,
    root: str = "",
    settings: dict[str, str] | None = None,
    platform: str = "",
) -> str:
    """The full text injected at SessionStart: health line, header, cached body; with a
    `platform`, the tools are named as that agent names them (tools_named)."""
    # One settings load for the render: the health line and the budget check load them too.
    with config.settings_snapshot():
        return _context_text(project=project, root=root, settings=settings, platform=platform)


def _context_text(
    *, project: str, root: str, settings: dict[str, str] | None, platform: str
) -> str:
    settings = settings if settings is not None else config.load()
    if platform:
        return tools_named(
            context_text(project=project, root=root, settings=settings),
            tool_names(platform=platform, route=config.install_route_setting(settings)),
        )
    zone = clock.local_zone(settings)
    health = observer_health_line(project=project).strip()
    header = f"# [{project}] recent context, {clock.stamp(clock.now_local(zone))}"
    lead = f"{health}\n{header}" if health else header
    body = _cached_body(
        project=project,
        root=root,
        settings=settings,
        zone=zone,
        room=MAX_CHARS - utf16_len(lead) - 1 - NAMES_ROOM,
    )
    text = f"{lead}\n{body}"
    return _fit_lines(text, MAX_CHARS)


def _cache_key(project: str, settings: dict[str, str]) -> str:
    # The newest revision too: curating a row (status, pin, scope) moves no date, and
    # history.row_changed's invalidation is the first guard, this the second.
    newest_obs, newest_sum, newest_revision = newest_stamp(project)
    knobs = "|".join(
        config.get(name, settings)
        for name in (
            "CLAUDE_MEM_CONTEXT_OBSERVATIONS",
            "CLAUDE_MEM_CONTEXT_SESSION_COUNT",
            "CLAUDE_MEM_CONTEXT_TOKENS",
            "CLAUDE_MEM_CONTEXT_PINNED_TOKENS",
        )
    )
    raw = (
        f"{FORMAT_VERSION}|{newest_obs}|{newest_sum}|{newest_revision}|{knobs}|"
        f"{clock.zone_key(settings)}"
    )
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def _cached_body(
    *, project: str, root: str, settings: dict[str, str], zone: tzinfo, room: int
) -> str:
    if scope.restricted_owner() is not None:
        # A teammate's index holds only their own rows: rendered for them, never cached (the
        # cache is one row per project, shared by the owner's local worker and staff).
        return context_body(project=project, root=root, settings=settings, zone=zone, room=room)
    key = _cache_key(project, settings)
    cached = next(iter(rows_of(_CACHED, project=project)), None)
    # A longer health line can leave less room than the body was rendered for.
    if cached is not None and cached[0] == key and utf16_len(cached[1]) <= room:
        return cached[1]
    body = context_body(project=project, root=root, settings=settings, zone=zone, room=room)
    fields = {"text": body, "tokens": estimate_tokens(body), "key": key}
    if upsert_supported():
        # One INSERT ... ON CONFLICT DO UPDATE: no transaction, no UPDATE first, and a
        # concurrent SessionStart's row is simply replaced by this same render.
        _CACHE_INSERT.upsert(conflict="project", update=tuple(fields), project=project, **fields)
        return body
    try:
        with transaction.atomic():
            stored = ContextCache.objects.filter(project=project).update(**fields)
            if not stored:
                _CACHE_INSERT.insert(project=project, **fields)
    except IntegrityError:
        pass  # a concurrent SessionStart stored the same render
    return body


_CACHED = CompiledQuery(
    lambda p: ContextCache.objects.filter(project=p["project"]).values_list("key", "text")[:1],
    "project",
)
_CACHE_INSERT = CompiledInsert(ContextCache)


@dataclass
class _Row:
    """One line of the day timeline: an observation, or a session's request (summary)."""

    created: datetime
    text_after_time: str  # "○ Title ~85 [agent-written] replaces #12"
    label: str  # "42290" or "S812"
    file: str | None  # the file group; None for session lines
    kind: str  # legend entry: the observation type, or "session"
    pk: int
    day: str = ""  # local day heading and time, computed once (renders repeat while fitting)
    time: str = ""
    agent: bool = False  # an agent wrote it (`remember`): the index says what that means


PINNED_HEADING = "Pinned:"
AGENT_TAG = framing.AGENT_TAG
AGENT_NOTE = framing.AGENT_NOTE
# A row that replaced several (a consolidation fold) names this many of them.
REPLACES_SHOWN = 2


def _suffix(tags: tuple[str, ...], replaced: list[int]) -> str:
    """` [tag, tag] replaces #12, #13 +2`: how current the row is and what it replaced."""
    out = f" [{', '.join(tags)}]" if tags else ""
    if replaced:
        shown = ", ".join(f"#{pk}" for pk in replaced[-REPLACES_SHOWN:])
        more = len(replaced) - REPLACES_SHOWN
        out += f" replaces {shown}" + (f" +{more}" if more > 0 else "")
    return out


def _obs_text(o: ObsRow, replaced: dict[int, list[int]]) -> str:
    icon = ICONS.get(o.type, OTHER_ICON)
    title = _one_line(o.title, TITLE_MAX)
    # Team mode: a row a teammate shared names its author.
    by = f" (by {o.author})" if o.author else ""
    return f"{icon} {title}{by} ~{o.fetch_tokens}{_suffix(o.tags, replaced.get(o.pk, []))}"


def _pinned_section(
    pinned: list[ObsRow], replaced: dict[int, list[int]], budget: int
) -> tuple[str, list[ObsRow]]:
    """The pinned section within `budget` tokens (heading included), newest pin first, and
    the rows it holds; a pin that does not fit is left to the timeline like any row."""
    if budget <= 0 or not pinned:
        return "", []
    lines, kept = [PINNED_HEADING], []
    for o in pinned:
        line = f"{o.pk} {_obs_text(o, replaced)}"
        if estimate_tokens("\n".join([*lines, line])) > budget:
            break
        lines.append(line)
        kept.append(o)
    return ("\n".join(lines), kept) if kept else ("", [])


def context_body(
    *, project: str, root: str, settings: dict[str, str], zone: tzinfo, room: int = MAX_CHARS
) -> str:
    """The index below the header, within `room` UTF-16 units and the token budget.

    Pinned rows lead, within their own budget; then the day timeline, whose oldest rows go
    first when it does not fit: the newest work matters most.
    """
    obs_limit = max(0, config.context_observations(settings))
    session_limit = max(0, config.context_session_count(settings))
    budget = max(0, config.context_tokens(settings))
    pinned_budget = max(0, config.context_pinned_tokens(settings))
    pinned = pinned_observations(project=project) if pinned_budget else []
    # Enough recent rows that those shown pinned can be left out of the timeline.
    recent = (
        recent_observations(project=project, limit=obs_limit + len(pinned)) if obs_limit else []
    )
    replaced = replaced_rows(list(dict.fromkeys(o.pk for o in [*pinned, *recent])))
    pinned_text, pinned_kept = _pinned_section(pinned, replaced, pinned_budget)
    in_section = {o.pk for o in pinned_kept}
    observations = [o for o in recent if o.pk not in in_section][:obs_limit]
    summaries = recent_summaries(project=project, limit=session_limit)
    if not observations and not summaries and not pinned_kept:
        return WELCOME
    files = _file_of(observations, root)
    rows = [
        _Row(
            o.created,
            _obs_text(o, replaced),
            str(o.pk),
            files[o.pk],
            o.type if o.type in ICONS else "other",
            o.pk,
            agent=AGENT_TAG in o.tags,
        )
        for o in observations
    ]
    rows += [
        _Row(
            s.created,
            f"{SESSION_ICON} {_one_line(s.request, TITLE_MAX) or '(no request)'}",
            f"S{s.pk}",
            None,
            "session",
            s.pk,
        )
        for s in summaries
    ]
    rows.sort(key=lambda row: (row.created, row.pk))
    for row in rows:
        local = clock.to_local(row.created, zone)
        row.day, row.time = clock.day_heading(local), clock.short_time(local)
    last = _last_summary(summaries[0], zone) if summaries else ""
    pinned_kinds = {o.type if o.type in ICONS else "other" for o in pinned_kept}
    pinned_agent = any(AGENT_TAG in o.tags for o in pinned_kept)

    def render(keep: int) -> str:
        kept = rows[len(rows) - keep :] if keep else []
        days = _days(kept)
        parts = [framing.NOTES_LINE]
        if pinned_agent or any(row.agent for row in kept):
            parts.append(AGENT_NOTE)
        parts += [
            _legend({row.kind for row in kept} | pinned_kinds),
            HOWTO + " This index: ~{cost}t.",
        ]
        if pinned_text:
            parts.append(pinned_text)
        if days:
            parts.append(days)
        if last:
            parts.append(last)
        draft = "\n".join(parts)
        # The index states its own cost, header included (the text before the body takes
        # MAX_CHARS - room - NAMES_ROOM characters); the number's few digits barely move it.
        lead = MAX_CHARS - room - NAMES_ROOM
        return draft.replace("{cost}", f"{estimate_tokens(draft) + (lead + 3) // 4:,}", 1)

    def fits(text: str) -> bool:
        return utf16_len(text) <= room and (not budget or estimate_tokens(text) <= budget)

    # Binary search for the most rows that fit (render is cheap; this is at most ~7 renders).
    full = render(len(rows))
    if fits(full):
        return full
    low, high = 0, len(rows) - 1
    while low < high:
        mid = (low + high + 1) // 2
        if fits(render(mid)):
            low = mid
        else:
            high = mid - 1
    return render(low)


def _legend(kinds: set[str]) -> str:
    """Only the icons this index uses: every legend entry is paid on every session start."""
    used = [f"{icon}{name}" for name, icon in LEGEND_ORDER if name in kinds]
    return "Legend: " + " ".join(used) if used else "Legend: (none)"


def _file_of(observations: list[ObsRow], root: str) -> dict[int, str]:
    """Each observation's file group: its first modified file, else its first file read."""
    first_read: dict[int, str] = {}
    first_modified: dict[int, str] = {}
    for obs_id, role, path in file_rows([o.pk for o in observations]):
        (first_modified if role == ObservationFile.Role.MODIFIED else first_read).setdefault(
            obs_id, path
        )
    out = {**first_read, **first_modified}
    for o in observations:
        if o.pk not in out:
            listed = [p for p in o.files_listed() if isinstance(p, str) and p]
            out[o.pk] = relative_path(listed[0], root) if listed else NO_FILE
    return out


def _days(rows: list[_Row]) -> str:
    """Day sections, oldest first: session lines, then rows grouped by file (first seen first)."""
    days: dict[str, tuple[list[_Row], dict[str, list[_Row]]]] = {}
    for row in rows:
        sessions, groups = days.setdefault(row.day, ([], {}))
        if row.file is None:
            sessions.append(row)
        else:
            groups.setdefault(row.file, []).append(row)
    out: list[str] = []
    for heading, (sessions, groups) in days.items():
        out.append(f"### {heading}")
        previous = ""
        for row in sessions:
            time = row.time
            out.append(f"{row.label} {DITTO if time == previous else time} {row.text_after_time}")
            previous = time
        for path, members in groups.items():
            out.append(f"{path}:")
            for row in members:
                time = row.time
                out.append(
                    f"{row.label} {DITTO if time == previous else time} {row.text_after_time}"
                )
                previous = time
    return "\n".join(out)


def _last_summary(summary: SummaryRow, zone: tzinfo) -> str:
    local = clock.to_local(summary.created, zone)
    when = f"{clock.day_heading(local).rsplit(',', 1)[0]} {clock.short_time(local)}"
    if summary.author:  # team mode: a session a teammate shared
        when += f", by {summary.author}"
    lines = [
        f"Last summary (S{summary.pk}, {when}): {_one_line(summary.request, TITLE_MAX)}".rstrip()
    ]
    for label, value in (
        ("Investigated", summary.investigated),
        ("Learned", summary.learned),
        ("Completed", summary.completed),
        ("Next steps", summary.next_steps),
    ):
        if value.strip():
            lines.append(f"{label}: {_one_line(value, SUMMARY_FIELD_MAX)}")
    return "\n".join(lines)


def _one_line(text: str, limit: int) -> str:
    return framing.one_line(text, limit)


def _fit_lines(text: str, limit: int) -> str:
    """Last guard: drop whole trailing lines until the text fits (never cut a character)."""
    if utf16_len(text) <= limit:
        return text
    lines = text.split("\n")
    while lines and utf16_len("\n".join(lines)) > limit:
        lines.pop()
    return "\n".join(lines)
