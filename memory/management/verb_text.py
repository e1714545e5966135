"""What the read-only verbs print, shared by their management commands and the fast path.

`cmem search`, `show`, `timeline`, `status` and `logs` print the same text whether Django
answered (memory/management/commands/) or the worker did over its socket (cmem_site/quick.py),
so the formatting lives here, on plain dicts as the HTTP API returns them, importing no
Django.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from memory.retrieval.render import observation_body

# How `cmem search` and `cmem timeline` print an id; `cmem show` takes each of them back.
MARKS = {"observation": "#", "summary": "#S", "prompt": "#P"}
SHOW_HINT = "Full text: `cmem show ID…`."


def when(iso: str) -> str:
    """`2026-12-01 15:40` from an ISO time (the worker and the models both speak UTC)."""
    return str(iso)[:16].replace("T", " ")


def hit_rows(hits: list[dict[str, Any]], *, width: int) -> list[str]:
    """Aligned columns (id, when, type, project, tokens, title) cut to `width` characters:
    the title takes what the others leave, so a narrow terminal never wraps a row."""
    cells = [
        (f"{MARKS[h['kind']]}{h['id']}", when(h["created_at"]), h["type"], h["project"], f"~{h['tokens']}")
        for h in hits
    ]  # fmt: skip
    header = ("id", "when", "type", "project", "tokens")
    widths = [max(len(row[i]) for row in [header, *cells]) for i in range(len(header))]
    widths[3] = min(widths[3], 20)  # a long project name must not squeeze the title away

    def line(row: tuple[str, ...], title: str) -> str:
        left = "  ".join(
            (cell[: widths[i] - 1] + "…" if len(cell) > widths[i] else cell).ljust(widths[i])
            if i != 4
            else cell.rjust(widths[i])
            for i, cell in enumerate(row)
        )
        room = max(10, width - len(left) - 2)
        return f"{left}  {title if len(title) <= room else title[: room - 1] + '…'}".rstrip()

    return [
        line(header, "title"),
        *(line(row, h["title"]) for row, h in zip(cells, hits, strict=True)),
    ]


def search_lines(hits: list[dict[str, Any]], *, words: str, width: int) -> list[str]:
    """The whole text answer of `cmem search`: the table, then one line that says what it
    was (a search without words lists the newest rows, and says so)."""
    rows = hit_rows(hits, width=width) if hits else []
    if not words:
        tail = SHOW_HINT if hits else "Nothing recorded yet."
        return [*rows, f"{len(hits)} newest row(s), newest first (no search words given). {tail}"]
    if not hits:
        return [f"0 result(s) for {words!r}."]
    return [*rows, f"{len(hits)} result(s). {SHOW_HINT}"]


def observation_text(obs: dict[str, Any]) -> str:
    """One observation in full, the way `cmem show` prints it."""
    lines = [
        f"#{obs['id']} [{obs['type']}] {obs['title']}",
        f"project {obs['project']} · {when(obs['created_at'])} · session {obs['session']}"
        + (f" · {obs['tool_name']}" if obs.get("tool_name") else ""),
    ]
    return "\n".join([*lines, *observation_body(obs)])


def timeline_line(item: dict[str, Any]) -> str:
    pointer = ">" if item["is_anchor"] else " "
    ref = f"{MARKS[item['kind']]}{item['id']}"
    return f"{pointer} {ref:<8} {when(item['created_at'])}  {item['type']:<10} {item['title'][:90]}"


# --- show: the ids search prints ---------------------------------------------------------

_ID = re.compile(r"#?([SsPp]?)(\d+)")
ID_KINDS = {"": "observation", "S": "summary", "P": "prompt"}


def parse_show_ids(raw: list[str]) -> list[tuple[str, int]] | str:
    """(kind, id) of each id as search prints them (12, #12, S3, #S3, P4, #P4), or the one-line
    usage error that names the first that is none of them."""
    out = []
    for text in raw:
        match = _ID.fullmatch(str(text).strip())
        if match is None or int(match.group(2)) <= 0:
            return (
                f"{text!r} is not an id: use 12 (observation), S3 (summary) or P4 (prompt), "
                "as `cmem search` prints them (see `cmem show --help`)"
            )
        out.append((ID_KINDS[match.group(1).upper()], int(match.group(2))))
    return out


# --- status --------------------------------------------------------------------------------


def format_duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d {hours}h {minutes}m"
    if hours:
        return f"{hours}h {minutes}m"
    if minutes:
        return f"{minutes}m {secs}s"
    return f"{secs}s"


def status_tail(observer: dict[str, str], search: dict[str, Any]) -> list[str]:
    """The observer and search lines below the worker's own."""
    lines = [
        f"  observer {observer['provider']} ({observer['why']})",
        f"    key      from {observer['key']}",
        f"    base URL from {observer['base_url']}",
    ]
    if search["semantic"]:
        waiting = search.get("waiting_for_vector")
        tail = (
            f" ({waiting:,} row(s) wait for a vector, embedded in the background)"
            if waiting
            else ""
        )
        lines.append(f"  search   hybrid: words and meaning{tail}")
    else:
        lines.append(f"  search   keyword only: {search['note']}")
    return lines


# --- logs ----------------------------------------------------------------------------------

# The queue's once-a-minute sweeps log three INFO lines each (most of a quiet log):
# "Enqueueing periodic task memory.tasks.events_sweep_task: <id>", "Executing …: <id>" and
# "…: <id> executed in 0.008s". A sweep that fails or warns still shows.
_HEARTBEAT = re.compile(
    r" INFO huey(?:\.consumer\.Scheduler)? \d+: (?:Executing |Enqueueing periodic task )?"
    r"[\w.]+_(?:sweep|periodic)_task: [0-9a-f-]+(?: executed in [\d.]+s)?\.?$"
)


def is_heartbeat(line: str) -> bool:
    return _HEARTBEAT.search(line) is not None


def tail_lines(path: Path, count: int, *, heartbeat: bool = True) -> list[str]:
    """The last `count` lines (heartbeat lines left out unless `heartbeat`), reading
    backwards in blocks so a big log costs little."""
    if count <= 0:
        return []
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        end = fh.tell()
        data = b""
        while end > 0:
            step = min(64 * 1024, end)
            end -= step
            fh.seek(end)
            data = fh.read(step) + data
            lines = data.decode(errors="replace").splitlines()[1 if end else 0 :]
            kept = lines if heartbeat else [line for line in lines if not is_heartbeat(line)]
            if len(kept) >= count:
                return kept[-count:]
    lines = data.decode(errors="replace").splitlines()
    kept = lines if heartbeat else [line for line in lines if not is_heartbeat(line)]
    return kept[-count:]


def summary_text(row: dict[str, Any]) -> str:
    """One session summary in full (`cmem show S3`)."""
    lines = [
        f"#S{row['id']} [summary] {row['request'] or '(no request recorded)'}",
        f"project {row['project']} · {when(row['created_at'])} · session {row['session']}",
    ]
    for label in ("investigated", "learned", "completed", "next_steps", "notes"):
        if row.get(label):
            lines += ["", f"{label.replace('_', ' ')}: {row[label]}"]
    return "\n".join(lines)


def prompt_text(row: dict[str, Any]) -> str:
    """One user prompt in full (`cmem show P4`)."""
    return "\n".join(
        [
            f"#P{row['id']} [prompt] prompt {row['number']} of session {row['session']}",
            f"project {row['project']} · {when(row['created_at'])}",
            "",
            row["text"],
        ]
    )


def status_head(
    *,
    running: bool,
    pid: int | None,
    url: str,
    health: dict[str, object] | None,
    uptime: float | None,
    pending: object,
    data_dir: object,
    stale_reason: str = "",
) -> list[str]:
    """The worker's own lines of `cmem status`."""
    if not running:
        lines = ["cmem is not running."]
        if stale_reason:
            lines.append(f"  stale pid file: {stale_reason} (`cmem start` replaces it)")
        return lines
    lines = ["cmem is running.", f"  pid      {pid}", f"  url      {url}/"]
    if health:
        lines.append(f"  version  {health.get('version')}")
    else:
        lines.append("  version  ? (the server does not answer yet; see `cmem logs`)")
    if uptime is not None:
        lines.append(f"  uptime   {format_duration(uptime)}")
    lines.append(f"  pending  {pending if pending is not None else '?'}")
    lines.append(f"  data     {data_dir}")
    return lines


def search_modes_here() -> dict[str, Any]:
    """Whether search by meaning is installed (the embeddings extra) in this environment; the
    count of rows waiting for a vector is the caller's (it needs the database)."""
    # only `cmem status` asks: the embeddings package is not needed to print a search
    from memory.retrieval import embeddings

    return {"semantic": embeddings.available(), "note": embeddings.unavailable_note()}
