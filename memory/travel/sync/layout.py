"""The remote's files as sync reads and writes them, in the clone's work tree.

Readable layout: the Markdown form's own paths (memory.travel.markdown), `blobs/<sha256>`
for deliverables' bytes, and `cmem-sync.json` (the format, and whether the files are
sealed and with which key). Sealed layout: every file, bytes included, under an opaque
name (memory.travel.sync.crypto). A file's bytes that are there already are never written
again, so exporting the same rows twice leaves nothing for git to commit.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

from memory import config, extensions
from memory.travel import markdown
from memory.travel.sync import crypto, git
from memory.travel.sync.state import SyncError

MANIFEST = "cmem-sync.json"
BLOBS = "blobs"
FORMAT = 1
# Up to this many gids, their files are found with one `git grep`; past it, by reading
# every file's front matter.
GREP_MAX_GIDS = 64
_GID_LINE = re.compile(rb"^gid:\s*[\"']?([0-9A-HJKMNP-TV-Z]{26})[\"']?\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Outgoing:
    new: int = 0
    changed: int = 0
    tombstones: int = 0
    blobs: int = 0

    @property
    def files(self) -> int:
        return self.new + self.changed + self.tombstones + self.blobs


def manifest_check(repo: Path, sealer: crypto.Sealer | None, remote: str) -> None:
    path = repo / MANIFEST
    if not path.exists():
        if git.text(repo, "ls-files"):
            raise SyncError(f"{remote} holds files but is not a cmem sync remote (no {MANIFEST})")
        return
    try:
        manifest = json.loads(path.read_text())
        sealed_with = str(manifest.get("key_id", "")) if manifest.get("encrypted") else ""
    except (ValueError, AttributeError):
        raise SyncError(f"{MANIFEST} in {remote} is not cmem's (broken JSON)") from None
    if int(manifest.get("format", 0)) > FORMAT:
        raise SyncError(f"{remote} was written by a newer cmem (format {manifest['format']})")
    if sealed_with and sealer is None:
        raise SyncError(
            f"{remote} is encrypted: `cmem sync --remote URL --key KEY` (or --key-file) with the"
            " key `cmem sync --export-key` prints on a machine that syncs it; nothing imported"
        )
    if sealer is not None and not sealed_with:
        raise SyncError(
            f"{remote} is not encrypted but this machine is set to encrypt; nothing imported"
        )
    if sealer is not None and sealed_with != sealer.key_id:
        raise SyncError(f"{remote} is encrypted with another key; nothing imported")


def manifest_write(repo: Path, sealer: crypto.Sealer | None) -> None:
    body: dict[str, object] = {"format": FORMAT, "encrypted": sealer is not None}
    if sealer is not None:
        body["key_id"] = sealer.key_id
    (repo / MANIFEST).write_text(json.dumps(body, indent=2) + "\n")


def changed_files(repo: Path, since: str, head: str) -> list[str]:
    """Files of `head` added or changed since the commit `since` (all of them without it)."""
    if not head:
        return []
    known = (
        since
        and git.run(repo, "cat-file", "-e", f"{since}^{{commit}}", check=False).returncode == 0
    )
    if known:
        raw = git.run(
            repo, "diff", "--name-only", "-z", "--no-renames", "--diff-filter=d", since, head
        ).stdout
    else:
        raw = git.run(repo, "ls-files", "-z").stdout
    return [name for name in raw.decode().split("\0") if name and name != MANIFEST]


@dataclass(frozen=True)
class Incoming:
    documents: list[tuple[str, bytes]]
    blobs: int


def read_incoming(repo: Path, names: list[str], sealer: crypto.Sealer | None) -> Incoming:
    """The Markdown files among `names` as (readable path, bytes); sealed files opened."""
    documents: list[tuple[str, bytes]] = []
    blobs = 0
    for name in names:
        data = (repo / name).read_bytes()
        if sealer is None:
            if name.startswith(f"{BLOBS}/"):
                blobs += 1
            else:
                documents.append((name, data))
            continue
        if not name.startswith("objects/"):
            raise SyncError(f"{name}: an unsealed file in an encrypted remote; nothing imported")
        try:
            plain = sealer.open(name, data)
        except crypto.KeyProblem as exc:
            raise SyncError(f"{exc}; nothing imported") from None
        header, _, body = plain.partition(b"\n")
        try:
            meta = json.loads(header)
        except ValueError:
            raise SyncError(f"{name}: a sealed file without its header; nothing imported") from None
        if "blob" in meta:
            blobs += 1
            continue
        gid, path = str(meta.get("gid", "")), str(meta.get("path", ""))
        if sealer.name_for(gid) != name:
            raise SyncError(f"{name}: sealed for another file (gid {gid!r}); nothing imported")
        documents.append((path, body))
    return Incoming(documents=documents, blobs=blobs)


def _safe_path(path: str) -> str:
    pure = PurePosixPath(path)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts or path in (MANIFEST,):
        raise SyncError(f"refusing to write {path!r} outside the sync layout")
    if pure.parts[0] in (BLOBS, "objects", ".git"):
        raise SyncError(f"refusing to write {path!r} over sync's own files")
    return str(pure)


def _file_gid(data: bytes) -> str:
    """The gid in a Markdown file's front matter ("" when none)."""
    if not data.startswith(b"---"):
        return ""
    end = data.find(b"\n---", 3)
    found = _GID_LINE.search(data[: end if end > 0 else len(data)])
    return found.group(1).decode() if found else ""


def _paths_of(repo: Path, gids: set[str]) -> dict[str, list[str]]:
    """Where the files of `gids` are in the (readable) work tree, by gid.

    A few gids (an incremental sync): `git grep` finds the files naming them. Many (a
    first sync): every file's front matter is read once instead, as git grep's time grows
    with the number of patterns (10,000 gids over 11,000 files took minutes)."""
    if not gids:
        return {}
    if len(gids) <= GREP_MAX_GIDS:
        patterns = "\n".join(sorted(gids)).encode()
        done = git.run(repo, "grep", "-l", "-z", "-F", "-f", "-", check=False, stdin=patterns)
        names = done.stdout.decode().split("\0")
    else:
        names = git.run(repo, "ls-files", "-z").stdout.decode().split("\0")
    found: dict[str, list[str]] = {}
    for name in names:
        if not name or name == MANIFEST or name.startswith(f"{BLOBS}/"):
            continue
        gid = _file_gid((repo / name).read_bytes())
        if gid in gids:
            found.setdefault(gid, []).append(name)
    return found


def export(
    repo: Path, since: datetime | None, sealer: crypto.Sealer | None, *, dry_run: bool
) -> Outgoing:
    """This machine's changes since `since` into the work tree (counted only in a dry run).
    A file whose bytes are there already is left alone, so re-exporting is free."""
    docs = list(markdown.documents(changed_since=since, for_sync=True))
    counts = {"new": 0, "changed": 0, "tombstones": 0, "blobs": 0}
    # Readable layout: a row whose path changed (a new title), or that a tombstone now
    # stands for, must not stay in the remote under its old path.
    placed = _paths_of(repo, {doc.gid for doc in docs}) if sealer is None else {}
    for doc in docs:
        if not doc.gid:
            continue  # derived notes (a file's memories) are for reading, not merging
        if sealer is None:
            path = _safe_path(doc.path)
            data = doc.text.encode()
            stale = [p for p in placed.get(doc.gid, []) if p != path]
        else:
            path = sealer.name_for(doc.gid)
            data = (
                json.dumps({"gid": doc.gid, "path": doc.path}).encode() + b"\n" + doc.text.encode()
            )
            stale = []
        if doc.kind == "deliverable":
            # Before the unchanged-file checks: bytes allowed after the metadata went out
            # (CLAUDE_MEM_SYNC_DELIVERABLES turned on later) still travel with `--all`.
            counts["blobs"] += _blob_out(repo, doc.gid, sealer, dry_run=dry_run)
        target = repo / path
        exists = target.exists()
        there = repo / (path if exists or not stale else stale[0])
        if there.exists():
            current = there.read_bytes()
            current = _opens_to(sealer, path, current) if sealer else current
            if current == data and not stale:
                continue
            # The remote's file already holds this version (the row came from it): two
            # machines may render the same version differently (links to rows only one of
            # them has), and re-sending it would bounce between them forever.
            if doc.version and doc.version.encode() in current:
                continue
        if doc.kind == "tombstone":
            counts["tombstones"] += 1
        else:
            counts["changed" if exists or stale else "new"] += 1
        if dry_run:
            continue
        for old in stale:
            (repo / old).unlink()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(sealer.seal(path, data) if sealer else data)
    return Outgoing(**counts)


def _opens_to(sealer: crypto.Sealer, name: str, sealed: bytes) -> bytes:
    try:
        return sealer.open(name, sealed)
    except crypto.KeyProblem:
        return b""


def _blob_name(sha: str, sealer: crypto.Sealer | None) -> str:
    return f"{BLOBS}/{sha}" if sealer is None else sealer.name_for(f"blob:{sha}")


def _blob_out(repo: Path, gid: str, sealer: crypto.Sealer | None, *, dry_run: bool) -> int:
    """A deliverable's bytes beside its metadata, when the settings allow it (1 if written)."""
    store = extensions.file_store("deliverable")
    if store is None or not config.get_bool("CLAUDE_MEM_SYNC_DELIVERABLES"):
        return 0
    found = store.file_of(gid)
    if found is None:
        return 0
    path, sha, size = found
    if size > config.get_int("CLAUDE_MEM_SYNC_DELIVERABLES_MAX_BYTES"):
        return 0
    target = repo / _blob_name(sha, sealer)
    if target.exists():
        return 0
    if not dry_run:
        data = path.read_bytes()
        target.parent.mkdir(parents=True, exist_ok=True)
        if sealer is None:
            target.write_bytes(data)
        else:
            header = json.dumps({"blob": sha}).encode()
            target.write_bytes(
                sealer.seal(target.relative_to(repo).as_posix(), header + b"\n" + data)
            )
    return 1


def blobs_in(repo: Path, sealer: crypto.Sealer | None) -> int:
    """Bytes of synced deliverables this machine lacks, from the remote's blobs."""
    store = extensions.file_store("deliverable")
    if store is None:
        return 0
    stored = 0
    for gid, sha in store.missing():
        name = _blob_name(sha, sealer)
        target = repo / name
        if not target.exists():
            continue
        data = target.read_bytes()
        if sealer is not None:
            data = _opens_to(sealer, name, data).partition(b"\n")[2]
        stored += bool(store.put(gid, data))
    return stored
