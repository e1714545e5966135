"""One sync: the remote's changes in, this machine's changes out, one commit on top.

A sync holds the lock (memory.travel.sync.state) and:
1. prepares the clone at <data dir>/sync/repo: whatever a killed sync left half-written
   there is thrown away (reset to the fetched head, `git clean` inside the clone only);
2. fetches, and reads the files changed since the remote commit it last built on (all
   files the first time), and imports them all-or-nothing (merged by global id: the later
   edit wins, the other is kept in history; tombstones delete);
3. takes the watermark (now), then exports this machine's changes since the previous
   watermark into the work tree, on top of the fetched head;
4. commits (nothing when nothing changed) and pushes; a push refused because someone
   pushed meanwhile goes back to 2 with the newer head, a bounded number of times;
5. saves the state (the commit, the watermark) only once the push succeeded.
Markdown files are never merged by git: merging is the import's, by global id.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory import config
from memory.travel import merge
from memory.travel.sync import crypto, git, layout
from memory.travel.sync.state import (
    SyncError,
    SyncState,
    remote_configured,
    repo_dir,
    state_load,
    state_save,
    sync_dir,
    sync_lock,
)

BRANCH = "main"
PUSH_ATTEMPTS = 4
# Overlap of consecutive exports: a row committed by another process just before the
# watermark but after the export's query would otherwise never leave. Re-exporting a
# row writes the same bytes, which git does not count as a change.
WATERMARK_OVERLAP = timedelta(seconds=5)
UNENCRYPTED_WARNING = (
    "This remote is not encrypted: a git remote keeps everything ever pushed to it, in its "
    "history, even after a memory is forgotten here. Whoever can read the remote (its host, "
    "anyone it is shared with) can read the synced memory: titles, facts and narratives of "
    "every project not excluded. Use a remote only you can read, or set sync up with "
    "`cmem sync --remote URL --encrypt`."
)


@dataclass(frozen=True)
class SyncReport:
    remote: str
    dry_run: bool
    incoming: int  # files changed in the remote since the last sync
    imported: str  # the import's one-line account ("" when nothing came in)
    outgoing: layout.Outgoing
    commit: str  # the remote's head after the sync
    pushed: bool
    attempts: int
    seconds: float
    git_seconds: float
    notes: tuple[str, ...] = field(default=())

    def describe(self) -> str:
        out = self.outgoing
        would = "would be " if self.dry_run else ""
        lines = [
            f"in: {self.incoming} file(s) changed in the remote, {would}imported"
            + (f" ({self.imported})" if self.imported else ""),
            f"out: {out.new} new, {out.changed} changed, {out.tombstones} tombstone(s)"
            + (f", {out.blobs} deliverable file(s)" if out.blobs else "")
            + (" would be pushed" if self.dry_run else ""),
        ]
        if not self.dry_run:
            lines.append(
                f"remote {self.remote} at {self.commit[:12] or '(empty)'}"
                + ("" if self.pushed else " (nothing to push)")
                + f"; {self.seconds:.2f} s ({self.git_seconds:.2f} s in git)"
            )
        lines.extend(self.notes)
        return "\n".join(lines)


# --- settings --------------------------------------------------------------------------------


def encrypted() -> bool:
    # A key given in the environment (a container) means the remote is sealed.
    return config.get_bool("CLAUDE_MEM_SYNC_ENCRYPT") or bool(config.get(crypto.KEY_ENV).strip())


def _sealer() -> crypto.Sealer | None:
    if not encrypted():
        return None
    text = crypto.key_text()
    if not text:
        raise SyncError(
            "sync is set to encrypt but this machine has no key: `cmem sync --key KEY` (or"
            " --key-file) with the key `cmem sync --export-key` prints on a synced machine"
        )
    try:
        return crypto.Sealer(crypto.key_parse(text))
    except crypto.KeyProblem as exc:
        raise SyncError(f"the sync key: {exc}") from None


def remote_normalized(remote: str) -> str:
    """A local path made absolute: git runs in the clone's folder, not where the user typed it."""
    if "://" not in remote and Path(remote).expanduser().exists():
        return str(Path(remote).expanduser().resolve())
    return remote


def remote_check(url: str) -> None:
    """SyncError unless `url` answers as a git repository (nothing is changed either way)."""
    done = git.run(sync_dir(), "ls-remote", "--heads", url, network=True, check=False)
    if done.returncode != 0:
        last = done.stderr.splitlines()[-1] if done.stderr else f"git exit {done.returncode}"
        raise SyncError(f"{url} is not a git repository this machine can reach ({last})")


def sync_configure(*, remote: str, encrypt: bool, key: str = "") -> list[str]:
    """Remember the remote (and the key, when encrypting); returns what to tell the user.

    1. check the remote answers as a git repository (nothing is saved otherwise);
    2. with --key: keep that key; with --encrypt and no key yet: make one;
    3. save the settings; a remote that changed starts over (everything is exported again).
    """
    remote = remote_normalized(remote)
    remote_check(remote)
    said: list[str] = []
    if key:
        try:
            crypto.key_save(key)
        except crypto.KeyProblem as exc:
            raise SyncError(f"--key: {exc}") from None
        encrypt = True
    elif encrypt and not crypto.key_text():
        crypto.key_save(crypto.key_generate())
        said.append(
            f"Made an encryption key ({crypto.key_path()}). Keep a copy: without it the remote "
            "cannot be read. `cmem sync --export-key` prints it for your next machine."
        )
    updates = {"CLAUDE_MEM_SYNC_REMOTE": remote}
    if encrypt:
        updates["CLAUDE_MEM_SYNC_ENCRYPT"] = "true"
    config.save(updates)
    state = state_load()
    if state.remote and state.remote != remote:
        state_save(SyncState(remote=remote))
    if not encrypt and not encrypted():
        said.append(UNENCRYPTED_WARNING)
    return said


# --- the work tree ---------------------------------------------------------------------------


def _pause(stage: str) -> None:
    """Tests kill a sync here (CMEM_SYNC_PAUSE=<stage>) to prove a kill loses nothing."""
    if os.environ.get("CMEM_SYNC_PAUSE") == stage:
        sys.stderr.write(f"sync: paused at {stage}\n")
        sys.stderr.flush()
        time.sleep(60)


def _prepare(repo: Path, remote: str) -> None:
    """The clone, clean: a half-written work tree of a killed sync is thrown away."""
    if not (repo / ".git").is_dir():
        repo.mkdir(mode=0o700, parents=True, exist_ok=True)
        git.run(repo, "init", "-q", "-b", BRANCH)
    # A git killed mid-write leaves its lock; only this process (holding the sync lock)
    # runs git in this clone, so the lock is stale.
    for stale in (repo / ".git" / "index.lock", repo / ".git" / "HEAD.lock"):
        stale.unlink(missing_ok=True)
    current = git.run(repo, "remote", "get-url", "origin", check=False)
    if current.returncode != 0:
        git.run(repo, "remote", "add", "origin", remote)
    elif current.stdout.decode().strip() != remote:
        git.run(repo, "remote", "set-url", "origin", remote)


def _fetch(repo: Path, remote: str) -> str:
    """Fetch and put the work tree at the remote's head; returns it ("" for an empty remote)."""
    done = git.run(
        repo,
        "fetch",
        "-q",
        "--prune",
        "origin",
        "+refs/heads/*:refs/remotes/origin/*",
        network=True,
        check=False,
    )
    if done.returncode != 0:
        last = done.stderr.splitlines()[-1] if done.stderr else f"git exit {done.returncode}"
        raise SyncError(f"cannot fetch {remote}: {last}")
    found = git.run(
        repo, "rev-parse", "-q", "--verify", f"refs/remotes/origin/{BRANCH}^{{commit}}", check=False
    )
    head = found.stdout.decode().strip() if found.returncode == 0 else ""
    if head:
        git.run(repo, "checkout", "-q", "-f", "-B", BRANCH, head)
        git.run(repo, "reset", "-q", "--hard", head)
    else:
        # An empty remote: an unborn branch and an empty index (a killed first sync may
        # have left a local commit that was never pushed).
        git.run(repo, "symbolic-ref", "HEAD", f"refs/heads/{BRANCH}")
        git.run(repo, "update-ref", "-d", f"refs/heads/{BRANCH}", check=False)
        git.run(repo, "read-tree", "--empty")
    git.run(repo, "clean", "-q", "-f", "-d", "-x")
    return head


def _push(repo: Path) -> tuple[bool, str]:
    """Push the local commit; (False, why) when the remote moved meanwhile, SyncError when
    it refused for another reason (a hook, permissions)."""
    done = git.run(
        repo,
        "push",
        "-q",
        "--porcelain",
        "origin",
        f"HEAD:refs/heads/{BRANCH}",
        network=True,
        check=False,
    )
    if done.returncode == 0:
        return True, ""
    said = f"{done.stdout.decode(errors='replace')}\n{done.stderr}"
    if "non-fast-forward" in said or "fetch first" in said:
        return False, "the remote moved"
    last = " | ".join(line for line in done.stderr.splitlines()[-3:] if line.strip())
    raise SyncError(
        f"the remote refused the push ({last or 'no reason given'}); nothing was pushed and the"
        " sync's state is unchanged: the next sync sends the same changes"
    )


# --- the sync --------------------------------------------------------------------------------


def sync_run(
    *, remote: str = "", dry_run: bool = False, everything: bool = False, wait_s: float = 120.0
) -> SyncReport:
    """One sync (see the module docstring for its steps). SyncError when it cannot be done.
    `everything`: offer every row, not only those changed since the last sync (history
    imported with its old times after sync was set up); files already there cost nothing."""
    remote = remote_normalized(remote) if remote else remote_configured()
    if not remote:
        raise SyncError("sync is not set up: `cmem sync --remote URL` (a git remote you control)")
    started = time.perf_counter()
    git_before = git.spent[0]
    with sync_lock(wait_s=wait_s):
        state = state_load()
        if state.remote and state.remote != remote:
            state = SyncState(remote=remote)  # another remote: everything travels again
        if everything:
            state = state.moved(watermark="")
        sealer = _sealer()
        repo = repo_dir()
        try:
            _prepare(repo, remote)
            return _attempts(
                repo, remote, state, sealer, dry_run=dry_run, started=started, git_before=git_before
            )
        except git.GitError as exc:
            raise SyncError(str(exc)) from None


def _attempts(
    repo: Path,
    remote: str,
    state: SyncState,
    sealer: crypto.Sealer | None,
    *,
    dry_run: bool,
    started: float,
    git_before: float,
) -> SyncReport:
    imported_upto = state.commit
    incoming_total = 0
    accounts: list[str] = []
    for attempt in range(1, PUSH_ATTEMPTS + 1):
        head = _fetch(repo, remote)
        layout.manifest_check(repo, sealer, remote)
        names = layout.changed_files(repo, imported_upto, head)
        incoming = layout.read_incoming(repo, names, sealer)
        incoming_total += len(incoming.documents)
        if incoming.documents and not dry_run:
            try:
                report = merge.import_files(incoming.documents, source=f"sync {remote}")
            except merge.MarkdownImportError as exc:
                raise SyncError(
                    f"a file in the remote cannot be imported, nothing was: {exc}"
                ) from None
            accounts.append(report.describe())
        if not dry_run:
            layout.blobs_in(repo, sealer)
        imported_upto = head
        _pause("imported")
        # Taken before the export: a row changed while it runs goes out next time.
        watermark = datetime.now(UTC) - WATERMARK_OVERLAP
        outgoing = layout.export(repo, state.watermark_time(), sealer, dry_run=dry_run)
        if dry_run:
            return _report(
                remote,
                True,
                incoming_total,
                "",
                outgoing,
                head,
                False,
                attempt,
                started,
                git_before,
            )
        if not (repo / layout.MANIFEST).exists():
            layout.manifest_write(repo, sealer)
        git.run(repo, "add", "-A")
        if git.run(repo, "diff", "--cached", "--quiet", check=False).returncode == 0:
            _state_done(state, remote, head, watermark)
            return _report(
                remote,
                False,
                incoming_total,
                "; ".join(accounts),
                outgoing,
                head,
                False,
                attempt,
                started,
                git_before,
            )
        git.run(
            repo,
            "commit",
            "-q",
            "--no-verify",
            "-m",
            f"cmem sync from {socket.gethostname()}: {outgoing.files} file(s)",
        )
        _pause("committed")
        pushed, _why = _push(repo)
        if pushed:
            commit = git.text(repo, "rev-parse", "HEAD")
            _pause("pushed")
            _state_done(state, remote, commit, watermark)
            return _report(
                remote,
                False,
                incoming_total,
                "; ".join(accounts),
                outgoing,
                commit,
                True,
                attempt,
                started,
                git_before,
            )
    raise SyncError(
        f"the remote kept moving: {PUSH_ATTEMPTS} pushes were overtaken; run `cmem sync` again"
    )


def _state_done(state: SyncState, remote: str, commit: str, watermark: datetime) -> None:
    state_save(
        state.moved(
            remote=remote,
            commit=commit,
            watermark=watermark.isoformat(),
            last_sync=datetime.now(UTC).isoformat(),
        )
    )


def _report(
    remote: str,
    dry_run: bool,
    incoming: int,
    imported: str,
    outgoing: layout.Outgoing,
    commit: str,
    pushed: bool,
    attempts: int,
    started: float,
    git_before: float,
) -> SyncReport:
    return SyncReport(
        remote=remote,
        dry_run=dry_run,
        incoming=incoming,
        imported=imported,
        outgoing=outgoing,
        commit=commit,
        pushed=pushed,
        attempts=attempts,
        seconds=time.perf_counter() - started,
        git_seconds=git.spent[0] - git_before,
    )


def sync_status() -> Iterator[str]:
    """What `cmem sync --status` and the doctor say: the remote, the last sync, encryption."""
    remote = remote_configured()
    if not remote:
        yield "sync: not set up (`cmem sync --remote URL`)"
        return
    state = state_load()
    yield f"sync: remote {remote}"
    yield f"last sync: {state.last_sync or 'never'}" + (
        f" (remote at {state.commit[:12]})" if state.commit else ""
    )
    yield f"automatic: {config.get('CLAUDE_MEM_SYNC_AUTO')}"
    yield f"deliverables' files: {'yes' if config.get_bool('CLAUDE_MEM_SYNC_DELIVERABLES') else 'no (metadata only)'}"
    if encrypted():
        yield f"encrypted: yes (key {crypto.key_path()}" + (
            ", present)" if crypto.key_text() else ", MISSING)"
        )
    else:
        yield "encrypted: no"
        yield UNENCRYPTED_WARNING
