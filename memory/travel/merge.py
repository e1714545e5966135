"""`cmem import markdown DIR` (and sync's incoming files): a tree of Markdown files merged
into the memory by global id, all or nothing.

Every file is read, checked and parsed before anything is written; then one transaction
applies them all, so a bad file (named in the error) leaves the memory as it was. Per row:

- unknown gid: created (its session too, from the front matter, when missing);
- known gid, same content: nothing;
- known gid, the file's `edited` later than the row's: the file wins, and the row's
  previous version stays in its history (action `sync-update`);
- the row's later: it stays, and the file's version is recorded in the history
  (`sync-conflict`) so the observation page shows what was not taken;
- same `edited`, different content: a person edited the file by hand; applied as their
  correction (`edit`, actor user, person_edited), with `edited` now.

A tombstone file forgets the row with its gid and is recorded here too. Correction files
are for reading: the history stays on the machine that made it. Text from a file is
untrusted: private parts are stripped and secrets redacted exactly as at capture.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from memory import extensions
from memory.curation import history
from memory.importers.bulk import insert_rows
from memory.models import (
    ContextCache,
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
from memory.travel.frontmatter import MarkdownImportError, time_text
from memory.travel.markdown import DELIVERABLE_FIELDS
from memory.travel.reading import ParsedFile, clean_text, parse_file, tree_files

Actor = ObservationRevision.Actor
# The observation fields a file carries and a merge compares (superseded_by as a gid).
_STATE = (
    "title", "subtitle", "facts", "narrative", "type", "status", "status_reason",
    "superseded_by", "pinned", "demoted", "certainty", "origin", "person_edited", "topic", "scope",
)  # fmt: skip
_FORGETTABLE: dict[str, type[Observation] | type[Summary]] = {
    "observation": Observation,
    "summary": Summary,
}


@dataclass
class MergeReport:
    """What an import did, one count per file."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    conflicts: int = 0
    forgotten: int = 0
    corrected: int = 0  # hand edits applied as a person's correction
    skipped: int = 0  # corrections and file notes (read-only), rows forgotten here
    files: int = 0
    projects: set[str] = field(default_factory=set)

    def describe(self) -> str:
        counts = (
            ("created", self.created),
            ("updated", self.updated),
            ("hand edits applied", self.corrected),
            ("conflicts kept in history", self.conflicts),
            ("forgotten", self.forgotten),
            ("unchanged", self.unchanged),
            ("skipped", self.skipped),
        )
        shown = ", ".join(f"{n} {label}" for label, n in counts if n) or "nothing"
        return f"{self.files} files: {shown}"


def _normal_text(fields: dict[str, Any]) -> dict[str, Any]:
    """The text as a file carries it (one round through the body format), for comparing a
    row with a file: what the format cannot hold (a newline in a title) is no difference."""
    return bodies.observation_read(bodies.observation_body(fields))


class _Merge:
    def __init__(self, files: list[ParsedFile], source: str, report: MergeReport) -> None:
        self.files, self.source, self.report = files, source, report
        self.viewer = scope.current_viewer()
        self.username = ""
        if self.viewer is not None:
            user = get_user_model().objects.filter(pk=self.viewer.user_id).first()
            self.username = user.get_username() if user else ""
        self.now = timezone.now()
        self.sessions: dict[str, Session] = {}

    def check_owner(self, file: ParsedFile, owner_id: int | None, *, what: str = "") -> None:
        """Team mode: an import never writes into, or over, another user's rows."""
        if self.viewer is not None and owner_id != self.viewer.user_id:
            raise MarkdownImportError(f"{file.name}: {what or file.gid} belongs to another user")

    def run(self) -> None:
        for file in self.files:
            if self.viewer is not None and file.author and file.author != self.username:
                raise MarkdownImportError(
                    f"{file.name}: written by {file.author!r}, not by {self.username!r} who imports it"
                )
        # Forgotten here before, or in this very import: never brought back.
        gone = set(_chunked(Tombstone.objects, "gid", [f.gid for f in self.files]))
        gone |= {f.gid for f in self.files if f.kind == "tombstone"}
        live = []
        for file in self.files:
            if file.kind == "correction" or (file.kind != "tombstone" and file.gid in gone):
                self.report.skipped += 1
            else:
                live.append(file)
        self.sessions_resolve(live)
        by_kind: dict[str, list[ParsedFile]] = {}
        for file in live:
            by_kind.setdefault(file.kind, []).append(file)
        self.observations(by_kind.get("observation", []))
        self.summaries(by_kind.get("summary", []))
        self.deliverables(by_kind.get("deliverable", []))
        self.tombstones(by_kind.get("tombstone", []))

    # sessions ---------------------------------------------------------------------------

    def sessions_resolve(self, files: list[ParsedFile]) -> None:
        """Every session the files name: by gid, else by (platform, the agent's id), else
        created from the session file or the first row naming it."""
        wanted: dict[str, tuple[ParsedFile, dict[str, Any]]] = {}
        for file in files:
            if file.kind == "session":
                wanted[file.gid] = (file, {"gid": file.gid, **file.values})
            elif "session" in file.values:
                ref = file.values["session"]
                wanted.setdefault(ref["gid"], (file, ref))
        known = {s.gid: s for s in _chunked(Session.objects, "gid", list(wanted), rows=True)}
        for gid, (file, ref) in wanted.items():
            session = known.get(gid)
            if session is None:
                session = Session.objects.filter(
                    platform=ref["platform"], session_id=ref["id"]
                ).first()
            if session is not None:
                self.check_owner(file, session.owner_id, what=f"its session {gid}")
            else:
                session = Session.objects.create(
                    gid=gid,
                    platform=ref["platform"],
                    session_id=ref["id"],
                    project=file.project,
                    started=ref["started"],
                    ended=ref.get("ended"),
                    status=ref.get("status", Session.Status.COMPLETED),
                    project_root=ref.get("project_root", ""),
                    cwd=ref.get("cwd", ""),
                    model=ref.get("model", ""),
                    owner_id=scope.writer_id(),
                )
                if file.kind == "session":
                    self.report.created += 1
                    file.values["_created"] = True
            self.sessions[gid] = session
        for file in files:
            if file.kind == "session":
                self.prompts(file)

    def prompts(self, file: ParsedFile) -> None:
        session = self.sessions[file.gid]
        # A session first made from a row's short reference learns the rest from its file.
        blank = [
            k
            for k in ("project_root", "cwd", "model", "ended")
            if not getattr(session, k) and file.values[k]
        ]
        for name in blank:
            setattr(session, name, file.values[name])
        if blank:
            session.save(update_fields=blank)
        have = set(session.prompts.values_list("number", flat=True))
        new = [
            Prompt(session=session, number=number, text=text, created=created)
            for number, created, text in file.values["prompts"]
            if number not in have
        ]
        insert_rows(Prompt, new)
        top = max((p.number for p in new), default=0)
        if top > session.prompt_counter:
            session.prompt_counter = top
            session.save(update_fields=["prompt_counter"])
        if not file.values.get("_created"):
            if new:
                self.report.updated += 1
            else:
                self.report.unchanged += 1
        self.report.projects.add(session.project)

    # observations -----------------------------------------------------------------------

    def observations(self, files: list[ParsedFile]) -> None:
        known = {
            o.gid: o
            for o in _chunked(
                Observation.objects.select_related("session", "superseded_by"),
                "gid",
                [f.gid for f in files],
                rows=True,
            )
        }
        session_pks = sorted({s.pk for s in self.sessions.values()})
        hashes: set[tuple[int, str]] = set()
        for start in range(0, len(session_pks), 5000):  # SQLite caps a query's parameters
            rows = Observation.objects.filter(session__in=session_pks[start : start + 5000])
            hashes.update(rows.exclude(content_hash="").values_list("session_id", "content_hash"))
        new: list[tuple[Observation, ParsedFile]] = []
        for file in files:
            row = known.get(file.gid)
            if row is not None:
                self.check_owner(file, row.session.owner_id)
                self.observation_merge(file, row)
                continue
            row = self.observation_new(file)
            key = (row.session_id, row.content_hash)
            if key in hashes:  # the same observation under another gid (an older import)
                self.report.unchanged += 1
                continue
            hashes.add(key)
            new.append((row, file))
            self.report.created += 1
        insert_rows(Observation, [row for row, _ in new])
        insert_rows(
            ObservationFile,
            [
                ObservationFile(
                    observation=row,
                    project=row.project,
                    path=path,
                    role=role,
                    content_hash=digest,
                    created=row.created,
                )
                for row, file in new
                for path, role, digest in file.values["files"]
            ],
        )
        # Links last: a row may be superseded by one created in the same import.
        targets = {f.values["superseded_by"] for _, f in new if f.values["superseded_by"]}
        pks = dict(_chunked(Observation.objects, "gid", list(targets), pairs=True))
        linked = []
        for row, file in new:
            target = pks.get(file.values["superseded_by"])
            if target:
                row.superseded_by_id = target
                linked.append(row)
        Observation.objects.bulk_update(linked, ["superseded_by"], batch_size=500)

    def observation_new(self, file: ParsedFile) -> Observation:
        v = file.values
        session = self.sessions[v["session"]["gid"]]
        row = Observation(
            gid=file.gid,
            session=session,
            project=file.project,
            **{k: v[k] for k in _STATE if k != "superseded_by"},
            concepts=v["concepts"],
            files_read=[p for p, role, _ in v["files"] if role == "read"],
            files_modified=[p for p, role, _ in v["files"] if role == "modified"],
            tool_name=v["tool"],
            prompt_number=v["prompt"],
            content_hash=v["hash"],
            created=v["created"],
            edited=v["edited"],
        )
        if not row.content_hash:
            row.content_hash = row.compute_content_hash()
        self.report.projects.add(file.project)
        return row

    def observation_merge(self, file: ParsedFile, row: Observation) -> None:
        v = file.values
        mine = _state_of(row)
        theirs = {k: v[k] for k in _STATE}
        theirs.update(_normal_text(theirs))
        differs = {k: theirs[k] for k in _STATE if theirs[k] != mine[k]}
        if not differs:
            self.report.unchanged += 1
            return
        self.report.projects.add(row.project)
        version = v["edited"] or v["created"]
        local = row.edited or row.created
        if v["edited"] == row.edited:
            # Same version, other content: a person changed the file by hand.
            self.apply(row, differs, action="edit", edited=self.now, person=True,
                       reason=f"edited by hand in {file.name}")  # fmt: skip
            self.report.corrected += 1
        elif version > local:
            self.apply(row, differs, action="sync-update", edited=v["edited"], person=False,
                       reason=f"a later version from {self.source} ({file.name}, edited {time_text(version)})")  # fmt: skip
            self.report.updated += 1
        elif set(differs) == {"person_edited"}:
            # Only who last touched it differs (the file predates a correction made here
            # from that very file): nothing of the content was lost.
            self.report.unchanged += 1
        else:
            after = _json_ready(differs)
            seen = row.revisions.filter(action="sync-conflict", after=after).exists()
            if seen:
                self.report.unchanged += 1
                return
            ObservationRevision.objects.create(
                observation=row,
                action="sync-conflict",
                actor=Actor.USER,
                user_id=scope.writer_id(),
                reason=(
                    f"an earlier version from {self.source} ({file.name}, edited "
                    f"{time_text(version)}) was not taken: this one was changed later"
                ),
                before={},
                after=after,
            )
            self.report.conflicts += 1

    def apply(
        self,
        row: Observation,
        differs: dict[str, Any],
        *,
        action: str,
        edited: Any,
        person: bool,
        reason: str,
    ) -> None:
        changes = dict(differs)
        if "superseded_by" in changes:
            gid = changes.pop("superseded_by")
            target = (
                Observation.objects.filter(gid=gid).values_list("pk", flat=True).first()
                if gid
                else None
            )
            changes["superseded_by_id"] = target
        if person:
            changes["person_edited"] = True
        before = history.snapshot(row, tuple(changes))
        for name, value in changes.items():
            setattr(row, name, value)
        changed = {k: before[k] for k in changes if before[k] != getattr(row, k)}
        row.edited = edited
        row.save(
            update_fields=[
                *(("superseded_by" if k == "superseded_by_id" else k) for k in changed),
                "edited",
            ]
        )
        history.revision_record(row, action=action, actor=Actor.USER, before=changed, reason=reason)
        history.row_changed(row, text=bool(set(changed) & set(history.TEXT_FIELDS)))

    # summaries, deliverables, tombstones ------------------------------------------------

    def summaries(self, files: list[ParsedFile]) -> None:
        names = [name for name, _ in bodies.SUMMARY_SECTIONS]
        known = {
            s.gid: s
            for s in _chunked(
                Summary.objects.select_related("session"), "gid", [f.gid for f in files], rows=True
            )
        }
        new = []
        for file in files:
            v = file.values
            row = known.get(file.gid)
            self.report.projects.add(file.project)
            if row is None:
                new.append(
                    Summary(
                        gid=file.gid,
                        session=self.sessions[v["session"]["gid"]],
                        project=file.project,
                        prompt_number=v["prompt"],
                        created=v["created"],
                        **{n: v[n] for n in names},
                    )
                )
                self.report.created += 1
                continue
            self.check_owner(file, row.session.owner_id)
            mine = bodies.summary_read(bodies.summary_body({n: getattr(row, n) for n in names}))
            changed = [n for n in names if mine[n] != v[n]]
            if not changed:
                self.report.unchanged += 1
                continue
            # A summary has no history of its own: the file's text (a person's edit) is taken.
            for n in changed:
                setattr(row, n, v[n])
            row.save(update_fields=changed)
            self.report.updated += 1
        insert_rows(Summary, new)

    def deliverables(self, files: list[ParsedFile]) -> None:
        # The deliverables app stores them through the session part it registered.
        parts = [p for p in extensions.session_parts() if p.name == "deliverables"]
        for file in files:
            if not parts:
                self.report.skipped += 1
                continue
            session = self.sessions[file.values["session"]["gid"]]
            prompts = {p.number: p for p in session.prompts.all()}
            item = {k: file.values[k] for k in DELIVERABLE_FIELDS}
            item |= {"gid": file.gid, "created": time_text(file.values["created"]),
                     "prompt_number": file.values["prompt_number"]}  # fmt: skip
            created = any(list(parts[0].import_rows(session, [item], prompts)))
            if created:
                self.report.created += 1
                self.report.projects.add(session.project)
            else:
                self.report.unchanged += 1

    def tombstones(self, files: list[ParsedFile]) -> None:
        for file in files:
            model = _FORGETTABLE[file.values["forgets"]]
            doomed: Observation | Summary | None = (
                model.objects.filter(gid=file.gid).select_related("session").first()
            )
            if doomed is not None:
                self.check_owner(file, doomed.session.owner_id)
                self.report.projects.add(doomed.project)
                doomed.delete()
                self.report.forgotten += 1
            _, made = Tombstone.objects.get_or_create(
                gid=file.gid,
                defaults={
                    "kind": file.values["forgets"],
                    "project": file.project,
                    "owner_id": scope.writer_id(),
                },
            )
            if doomed is None:
                if made:
                    self.report.created += 1
                else:
                    self.report.unchanged += 1


def _state_of(row: Observation) -> dict[str, Any]:
    state = {k: getattr(row, k) for k in _STATE if k != "superseded_by"}
    state["superseded_by"] = (
        row.superseded_by.gid if row.superseded_by_id and row.superseded_by else ""
    )
    sanitizer = Sanitizer(cap=0)
    state.update(
        _normal_text(clean_text({k: state[k] for k in history.TEXT_FIELDS}, sanitizer.text))
    )
    state["facts"] = list(state["facts"])
    return state


def _json_ready(values: dict[str, Any]) -> dict[str, Any]:
    return {k: (time_text(v) if isinstance(v, datetime) else v) for k, v in values.items()}


def _chunked(
    manager: Any, key: str, values: list[str], *, rows: bool = False, pairs: bool = False
) -> list[Any]:
    """Rows whose `key` is in `values`, a few thousand per query (SQLite caps parameters)."""
    out: list[Any] = []
    for start in range(0, len(values), 5000):
        qs = manager.filter(**{f"{key}__in": values[start : start + 5000]})
        if pairs:
            out += qs.values_list(key, "pk")
        elif rows:
            out += list(qs)
        else:
            out += qs.values_list(key, flat=True)
    return out


def import_files(files: Iterable[tuple[str, bytes]], *, source: str) -> MergeReport:
    """Merge files (name for messages, raw bytes) into the memory: every file is read and
    checked first, then all are written in one transaction. MarkdownImportError (naming
    the file) when any one is bad; then nothing was written."""
    sanitizer = Sanitizer(cap=0)
    parsed: list[ParsedFile] = []
    report = MergeReport()
    seen: dict[str, str] = {}
    for name, raw in files:
        report.files += 1
        item = parse_file(name, raw, sanitizer)
        if item is None:
            report.skipped += 1
            continue
        if item.gid in seen:
            raise MarkdownImportError(f"{name}: the same gid {item.gid} as {seen[item.gid]}")
        seen[item.gid] = name
        parsed.append(item)
    with transaction.atomic():
        _Merge(parsed, source, report).run()
        for project in sorted(report.projects):
            transaction.on_commit(lambda project=project: ContextCache.invalidate(project=project))  # type: ignore[misc]
    return report


def import_markdown(root: Path) -> MergeReport:
    """`cmem import markdown DIR`."""
    return import_files(tree_files(root), source=str(root))


# `cmem import markdown DIR` (memory/management/commands/import.py lists the sources).
HELP = "A folder of Markdown files (from `cmem export --format markdown`), merged by global id."


def add_arguments(parser: Any) -> None:
    parser.add_argument("dir", type=Path, help="The folder.")
    parser.add_argument(
        "--user",
        default="",
        help="Team mode: import as this user (their rows only; files of others are refused).",
    )


def import_from(*, options: dict[str, Any], report: Any, progress: Any) -> Any:
    username = options.get("user") or ""
    if username:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise MarkdownImportError(f"no user named {username!r}")
        with scope.viewer_scope(user_id=user.pk, staff=user.is_staff):
            merged = import_markdown(options["dir"])
    else:
        merged = import_markdown(options["dir"])
    report.notes.append(merged.describe())
    return report
