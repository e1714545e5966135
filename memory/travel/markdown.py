"""The memory as a tree of Markdown files: rows rendered to `Document`s, and written.

Layout (`DIR/<project-slug>/…`, the project's real name in each file's front matter):

- `<YYYY-MM>/<title-slug>-<gid>.md`: an observation (also what the agent wrote with
  `remember`); `summary-…`, `session-…` (its prompts) and `file-…` (a deliverable's record,
  not its bytes) beside it, by the month the row was created;
- `history/<YYYY-MM>/<action>-<gid>.md`: one correction (an ObservationRevision), for
  reading only: an import does not replay them;
- `forgotten/<gid>.md`: a tombstone; importing it forgets the row there too;
- `files/<path-slug>.md`: per file, the memories that read or modified it (derived).

Output is deterministic (sorted keys and lists, `\n` line ends, no export time in any
file), so export, import into an empty data dir and export again gives the same bytes.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from django.db.models import QuerySet

from memory import extensions, projects
from memory.models import (
    Observation,
    ObservationFile,
    ObservationRevision,
    Prompt,
    Session,
    Summary,
    Tombstone,
)
from memory.privacy.redaction import Sanitizer
from memory.team import scope
from memory.travel import bodies
from memory.travel.frontmatter import check_name, dump, join, time_text

_NO_PROJECT = "no-project"
# Windows refuses these as a file's base name, whatever the extension.
_RESERVED = {
    "con",
    "prn",
    "aux",
    "nul",
    *(f"com{i}" for i in range(10)),
    *(f"lpt{i}" for i in range(10)),
}


@dataclass(frozen=True)
class Document:
    """One file of the tree: what sync moves and `write_tree` writes."""

    gid: str
    kind: str  # session | observation | summary | deliverable | tombstone | correction | file
    project: str
    path: str  # relative posix path in the readable layout
    text: str  # the whole file
    version: str  # ISO-8601 UTC time of this version (edited or created); the later wins


def slug(text: str, *, limit: int = 60) -> str:
    """Lowercase ASCII letters, digits and dashes: a name every filesystem and Obsidian
    accept (no separators, dots, reserved names or case-only differences)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    out = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:limit].strip("-")
    return f"{out}-" if out in _RESERVED else out


def project_slug(project: str) -> str:
    """A project's folder; a short hash of the name when the slug is not the name itself,
    so `My App` and `my-app` never share a folder."""
    if not project:
        return _NO_PROJECT
    base = slug(project, limit=50) or "project"
    return base if base == project else f"{base}-{_short_hash(project)}"


def file_note_stem(project: str, path: str) -> str:
    return f"{project_slug(project)}/files/{slug(path, limit=80) or 'file'}-{_short_hash(path)}"


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _month(moment: datetime) -> str:
    return time_text(moment)[:7]  # type: ignore[index]


def version_of(row: Observation) -> datetime:
    return row.edited or row.created


class _Rows:
    """Everything the documents are rendered from, read once (a few queries)."""

    def __init__(self, *, project: str, for_sync: bool) -> None:
        self.for_sync = for_sync
        # Sync carries text again through redaction: a secret pattern added since capture
        # must not leave the machine.
        self.sanitizer = Sanitizer(cap=0, redact=True) if for_sync else None
        sessions = scope.owned(Session.objects.select_related("owner"), "owner")
        if project:
            sessions = sessions.filter(project=project)
        self.sessions = {s.pk: s for s in sessions.order_by("started", "pk")}
        if for_sync:
            self.sessions = {pk: s for pk, s in self.sessions.items() if not _excluded(s)}
        self.project = project
        self.observations = [
            o
            for o in self.below(Observation.objects.order_by("created", "pk"))
            if o.session_id in self.sessions
        ]
        by_pk = {o.pk: o for o in self.observations}
        self.files: dict[int, list[ObservationFile]] = defaultdict(list)
        for f in self.below(ObservationFile.objects.all(), "observation__session").order_by(
            "path", "role", "pk"
        ):
            if f.observation_id in by_pk:
                self.files[f.observation_id].append(f)
        self.by_pk = by_pk
        self.gid_of = {o.pk: o.gid for o in self.observations}
        # A successor outside the selection (another project) is still named by its gid.
        elsewhere = {o.superseded_by_id for o in self.observations} - set(by_pk) - {None}
        self.gid_of |= dict(Observation.objects.filter(pk__in=elsewhere).values_list("pk", "gid"))
        self.supersedes: dict[int, list[Observation]] = defaultdict(list)
        for o in self.observations:
            if o.superseded_by_id in by_pk:
                self.supersedes[o.superseded_by_id].append(o)
        # Names and link labels come from the text too: through redaction when syncing.
        self.title_of = {o.gid: self.text(o.title) for o in self.observations}
        self.stem_of = {
            o.gid: f"{slug(self.title_of[o.gid]) or 'memory'}-{o.gid}" for o in self.observations
        }
        self.by_session: dict[int, list[Observation]] = defaultdict(list)
        self.place: dict[int, int] = {}  # an observation's index in its session's list
        for o in self.observations:
            self.place[o.pk] = len(self.by_session[o.session_id])
            self.by_session[o.session_id].append(o)
        self.prompts: dict[int, list[Prompt]] = defaultdict(list)
        for p in self.below(Prompt.objects.order_by("number")):
            if p.session_id in self.sessions:
                self.prompts[p.session_id].append(p)
        self.summaries = [
            s
            for s in self.below(Summary.objects.order_by("created", "pk"))
            if s.session_id in self.sessions
        ]
        self.session_summaries: dict[int, list[Summary]] = defaultdict(list)
        for x in self.summaries:
            self.session_summaries[x.session_id].append(x)
        rows = list(self.sessions.values())
        # Deliverables belong to an app memory does not import: its rows come through the
        # session part it registered (memory/extensions.py).
        self.deliverables: list[tuple[Session, dict[str, Any]]] = []
        for part in extensions.session_parts():
            if part.name != "deliverables":
                continue
            for pk, items in part.export(rows).items():
                self.deliverables.extend((self.sessions[pk], item) for item in items)

    def below(self, rows: QuerySet[Any], path: str = "session") -> QuerySet[Any]:
        rows = scope.owned(rows, f"{path}__owner")
        return rows.filter(**{f"{path}__project": self.project}) if self.project else rows

    def text(self, value: str) -> str:
        return self.sanitizer.text(value) if self.sanitizer else value

    def session_stem(self, s: Session) -> str:
        return f"session-{time_text(s.started)[:10]}-{s.gid}"  # type: ignore[index]

    def author(self, s: Session) -> str:
        return s.owner.get_username() if s.owner_id and s.owner else ""


def _excluded(session: Session) -> bool:
    """An excluded project (settings or the admin's list) never leaves by sync."""
    paths = [p for p in (session.project_root, session.cwd) if p]
    if any(projects.is_excluded(p) for p in paths):
        return True
    return any(projects.glob_matches(g, session.project) for g in projects.excluded_globs())


def _session_ref(s: Session) -> dict[str, Any]:
    return {
        "gid": s.gid,
        "platform": s.platform,
        "id": s.session_id,
        "started": time_text(s.started),
    }


def _observation_doc(rows: _Rows, o: Observation) -> Document:
    session = rows.sessions[o.session_id]
    superseded_by = rows.gid_of.get(o.superseded_by_id) if o.superseded_by_id else None
    supersedes = sorted(rows.gid_of[x.pk] for x in rows.supersedes.get(o.pk, []))
    files = rows.files.get(o.pk, [])
    front = {
        "gid": o.gid,
        "kind": "observation",
        "project": o.project,
        "type": o.type,
        "session": _session_ref(session),
        "files": [{"path": f.path, "role": f.role, "hash": f.content_hash} for f in files],
        "created": time_text(o.created),
        "edited": time_text(o.edited),
        "status": o.status,
        "status_reason": rows.text(o.status_reason),
        "superseded_by": superseded_by,
        "supersedes": supersedes,
        "pinned": o.pinned,
        "demoted": o.demoted,
        "certainty": o.certainty,
        "origin": o.origin,
        "person_edited": o.person_edited,
        "topic": rows.text(o.topic),
        "scope": o.scope,
        "author": rows.author(session),
        "concepts": sorted(str(c) for c in (o.concepts or [])),
        "prompt": o.prompt_number,
        "tool": o.tool_name,
        "hash": o.content_hash,
    }
    text_fields = {
        "title": rows.text(o.title),
        "subtitle": rows.text(o.subtitle),
        "facts": [rows.text(str(f)) for f in (o.facts or [])],
        "narrative": rows.text(o.narrative),
    }
    siblings = rows.by_session[o.session_id]
    at = rows.place[o.pk]
    links = [f"Session: {bodies.link(rows.session_stem(session), _session_title(session))}"]
    if at > 0:
        links.append(f"Before it in the session: {_obs_link(rows, siblings[at - 1].gid)}")
    if at + 1 < len(siblings):
        links.append(f"After it in the session: {_obs_link(rows, siblings[at + 1].gid)}")
    if superseded_by and superseded_by in rows.stem_of:
        links.append(f"Superseded by: {_obs_link(rows, superseded_by)}")
    links += [f"Supersedes: {_obs_link(rows, g)}" for g in supersedes]
    links += [
        f"File ({f.role}): {bodies.link(file_note_stem(o.project, f.path), f.path)}" for f in files
    ]
    body = bodies.with_links(bodies.observation_body(text_fields), links)
    path = f"{project_slug(o.project)}/{_month(o.created)}/{rows.stem_of[o.gid]}.md"
    return Document(
        o.gid, "observation", o.project, path, join(front, body), time_text(version_of(o)) or ""
    )


def _obs_link(rows: _Rows, gid: str) -> str:
    return bodies.link(rows.stem_of[gid], rows.title_of[gid])


def _session_title(s: Session) -> str:
    return f"Session {time_text(s.started)[:16].replace('T', ' ')} · {s.platform}"  # type: ignore[index]


def _session_doc(rows: _Rows, s: Session) -> Document:
    prompts = rows.prompts.get(s.pk, [])
    front = {
        "gid": s.gid,
        "kind": "session",
        "project": s.project,
        "platform": s.platform,
        "id": s.session_id,
        "started": time_text(s.started),
        "ended": time_text(s.ended),
        "status": s.status,
        "project_root": s.project_root,
        "cwd": s.cwd,
        "model": s.model,
        "author": rows.author(s),
    }
    body = bodies.session_body(
        _session_title(s),
        [(p.number, time_text(p.created) or "", rows.text(p.text)) for p in prompts],
    )
    links = [f"Memory: {_obs_link(rows, o.gid)}" for o in rows.by_session.get(s.pk, [])]
    links += [
        f"Summary: {bodies.link(_summary_stem(rows, x), rows.text(x.request) or 'summary')}"
        for x in rows.session_summaries.get(s.pk, [])
    ]
    times = [s.started, *(t for t in (s.ended,) if t), *(p.created for p in prompts)]
    path = f"{project_slug(s.project)}/{_month(s.started)}/{rows.session_stem(s)}.md"
    body = bodies.with_links(body, links)
    return Document(
        s.gid, "session", s.project, path, join(front, body), time_text(max(times)) or ""
    )


def _summary_stem(rows: _Rows, x: Summary) -> str:
    return f"summary-{slug(rows.text(x.request), limit=40) or 'session'}-{x.gid}"


def _summary_doc(rows: _Rows, x: Summary) -> Document:
    session = rows.sessions[x.session_id]
    front = {
        "gid": x.gid,
        "kind": "summary",
        "project": x.project,
        "session": _session_ref(session),
        "created": time_text(x.created),
        "prompt": x.prompt_number,
        "author": rows.author(session),
    }
    fields = {name: rows.text(getattr(x, name)) for name, _ in bodies.SUMMARY_SECTIONS}
    links = [f"Session: {bodies.link(rows.session_stem(session), _session_title(session))}"]
    body = bodies.with_links(bodies.summary_body(fields), links)
    path = f"{project_slug(x.project)}/{_month(x.created)}/{_summary_stem(rows, x)}.md"
    return Document(
        x.gid, "summary", x.project, path, join(front, body), time_text(x.created) or ""
    )


# The deliverable fields a file carries (the session part's export names them).
DELIVERABLE_FIELDS = (
    "original_path",
    "stored_path",
    "size",
    "sha256",
    "content_type",
    "attached",
    "title",
    "note",
)


def _deliverable_doc(rows: _Rows, session: Session, item: dict[str, Any]) -> Document:
    created = item["created"]
    when = datetime.fromisoformat(created) if isinstance(created, str) else session.started
    front = {
        "gid": item["gid"],
        "kind": "deliverable",
        "project": session.project,
        "session": _session_ref(session),
        "created": time_text(when),
        "prompt": item.get("prompt_number"),
        "author": rows.author(session),
        **{
            f: rows.text(item[f]) if isinstance(item.get(f), str) else item.get(f)
            for f in DELIVERABLE_FIELDS
        },
    }
    name = str(item.get("original_path") or "").rsplit("/", 1)[-1]
    body = f"# {bodies.one_line(str(front['title'] or name))}\n\n"
    if front["note"]:
        body += f"{str(front['note']).strip()}\n\n"
    body += f"A file from this session: `{name}`, {item.get('size')} bytes (sha256 {item.get('sha256')}).\n"
    links = [f"Session: {bodies.link(rows.session_stem(session), _session_title(session))}"]
    body = bodies.with_links(body, links)
    stem = f"file-{slug(name, limit=40) or 'file'}-{item['gid']}"
    path = f"{project_slug(session.project)}/{_month(when)}/{stem}.md"
    return Document(
        item["gid"], "deliverable", session.project, path, join(front, body), time_text(when) or ""
    )


def _correction_doc(rows: _Rows, r: ObservationRevision) -> Document:
    o = rows.by_pk[r.observation_id]

    def shown(values: dict[str, Any]) -> dict[str, Any]:
        out = dict(values)
        if "superseded_by_id" in out:
            out["superseded_by"] = rows.gid_of.get(out.pop("superseded_by_id"))
        return out

    front = {
        "gid": r.gid,
        "kind": "correction",
        "project": o.project,
        "observation": o.gid,
        "action": r.action,
        "actor": r.actor,
        "user": r.user.get_username() if r.user_id and r.user else "",
        "created": time_text(r.created),
        "undone": time_text(r.undone),
        "batch": r.batch,
    }
    body = f"# {r.action} · {_obs_link(rows, o.gid)}\n\n"
    if r.reason.strip():
        body += f"{r.reason.strip()}\n\n"
    for label, values in (("Before", r.before), ("After", r.after)):
        if values:
            body += f"## {label}\n\n```yaml\n{dump(shown(values))}```\n\n"
    path = f"{project_slug(o.project)}/history/{_month(r.created)}/{slug(r.action) or 'change'}-{r.gid}.md"
    return Document(
        r.gid, "correction", o.project, path, join(front, body), time_text(r.created) or ""
    )


def _tombstone_doc(t: Tombstone) -> Document:
    front = {
        "gid": t.gid,
        "kind": "tombstone",
        "project": t.project,
        "forgets": t.kind,
        "created": time_text(t.created),
    }
    body = (
        f"# Forgotten {t.kind}\n\nThe {t.kind} {t.gid} was forgotten on {time_text(t.created)}. "
        "Importing this file forgets it there too.\n"
    )
    path = f"{project_slug(t.project)}/forgotten/{t.gid}.md"
    return Document(
        t.gid, "tombstone", t.project, path, join(front, body), time_text(t.created) or ""
    )


def _file_docs(rows: _Rows) -> Iterator[Document]:
    """One note per (project, path): the memories that read or modified the file."""
    touched: dict[tuple[str, str], list[tuple[Observation, str]]] = defaultdict(list)
    for o in rows.observations:
        for f in rows.files.get(o.pk, []):
            touched[(o.project, f.path)].append((o, f.role))
    for (project, path), items in sorted(touched.items()):
        front = {"kind": "file", "project": project, "path": path}
        lines = "".join(
            f"- {time_text(o.created)[:10]} ({role}): {_obs_link(rows, o.gid)}\n"  # type: ignore[index]
            for o, role in items
        )
        body = f"# {bodies.one_line(path)}\n\nThe memories that read or modified this file, oldest first.\n\n{lines}"
        yield Document(
            "", "file", project, f"{file_note_stem(project, path)}.md", join(front, body), ""
        )


def documents(
    *, project: str = "", changed_since: datetime | None = None, for_sync: bool = False
) -> Iterator[Document]:
    """Every row the current viewer may read (of one project, if named), as files.

    `changed_since`: only rows whose version (edited, else created; a session's latest
    prompt) is later, and tombstones made after it. `for_sync`: no correction files (the
    history stays on this machine), no excluded project, text redacted again."""
    yield from _documents(
        project=project, changed_since=changed_since, for_sync=for_sync, notes=False
    )


def _documents(
    *, project: str, changed_since: datetime | None, for_sync: bool, notes: bool
) -> Iterator[Document]:
    rows = _Rows(project=project, for_sync=for_sync)
    since = time_text(changed_since) if changed_since else ""

    def fresh(doc: Document) -> bool:
        return not since or doc.version > since

    for s in rows.sessions.values():
        doc = _session_doc(rows, s)
        if fresh(doc):
            yield doc
    for o in rows.observations:
        # Checked before rendering: a sync asking what changed renders only that.
        if not since or (time_text(version_of(o)) or "") > since:
            yield _observation_doc(rows, o)
    for x in rows.summaries:
        if not since or (time_text(x.created) or "") > since:
            yield _summary_doc(rows, x)
    for session, item in rows.deliverables:
        doc = _deliverable_doc(rows, session, item)
        if fresh(doc):
            yield doc
    if not for_sync:
        revisions = rows.below(
            ObservationRevision.objects.select_related("user").order_by("created", "pk"),
            "observation__session",
        )
        if changed_since:
            revisions = revisions.filter(created__gt=changed_since)
        for r in revisions:
            if r.observation_id in rows.by_pk:
                yield _correction_doc(rows, r)
    stones = scope.owned(Tombstone.objects.order_by("created", "gid"), "owner")
    if project:
        stones = stones.filter(project=project)
    if changed_since:
        stones = stones.filter(created__gt=changed_since)
    for t in stones:
        if not (for_sync and t.project and _project_excluded(t.project)):
            yield _tombstone_doc(t)
    if notes:
        yield from _file_docs(rows)


def _project_excluded(project: str) -> bool:
    return any(projects.glob_matches(g, project) for g in projects.excluded_globs())


def write_tree(root: Path, docs: Iterable[Document]) -> int:
    """Write each document under `root`; returns how many files were written (a file
    already holding the same bytes is left alone, so its time does not move)."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    base = root.resolve()
    written = 0
    checked: set[Path] = set()
    for doc in docs:
        # A document may come from another machine (sync): its path is checked like a name.
        check_name(doc.path)
        target = base / doc.path
        data = doc.text.encode()
        if target.parent not in checked:
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            # A folder in the tree that is a symlink out of it is never written through.
            if not target.parent.resolve().is_relative_to(base):
                raise ValueError(f"{doc.path}: its folder leads out of {root}")
            checked.add(target.parent)
        if target.is_file() and not target.is_symlink() and target.read_bytes() == data:
            continue
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        written += 1
    return written


def export_markdown(root: Path, *, project: str = "") -> int:
    """`cmem export --format markdown DIR`: every document and the per-file notes; files
    an earlier export wrote that no row gives any more (a retitled memory's old name, a
    forgotten one) are removed, so a folder exported into again holds each gid once."""
    docs = list(_documents(project=project, changed_since=None, for_sync=False, notes=True))
    written = write_tree(root, docs)
    _stale_remove(root.resolve(), {d.path for d in docs}, project_slug(project) if project else "")
    return written


# What cmem names a file it writes: ends in a global id, or lies in a folder it owns.
_OWN_NAME = re.compile(r"-[0-9A-HJKMNP-TV-Z]{26}\.md$")
_OWN_FOLDERS = ("files", "forgotten")


def _stale_remove(base: Path, keep: set[str], project_folder: str) -> int:
    """Remove the files of the tree cmem wrote and this export did not (never a file of a
    person's own, never through a symlink, never in a hidden folder such as .obsidian)."""
    removed = 0
    start = base / project_folder if project_folder else base
    for folder, dirs, names in os.walk(start, followlinks=False):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        here = Path(folder)
        for name in names:
            path = here / name
            rel = path.relative_to(base).as_posix()
            if rel in keep or not name.endswith(".md") or path.is_symlink():
                continue
            if _OWN_NAME.search(name) or here.name in _OWN_FOLDERS:
                path.unlink()
                removed += 1
    return removed
