"""`cmem sync`'s engine in-process (issue 34): two data dirs play two machines through a
real bare git repository, with a stand-in for the Markdown form (the end-to-end tests in
test_sync.py drive real `cmem` processes). HOME is an empty folder: no git identity."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory import extensions, global_ids
from memory.travel import markdown, merge
from memory.travel.sync import crypto, engine, git, layout
from memory.travel.sync.engine import SyncError, sync_configure, sync_run
from memory.travel.sync.state import state_load


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _text(gid: str, kind: str, version: str, body: str) -> str:
    return f"---\ngid: {gid}\nkind: {kind}\nversion: {version}\n---\n{body}\n"


@dataclass
class FakeMemory:
    """One machine's memory as the Markdown form shows it to sync: documents by gid."""

    rows: dict[str, markdown.Document] = field(default_factory=dict)
    imports: int = 0

    def add(self, body: str, *, gid: str = "", project: str = "secretproj") -> str:
        gid = gid or global_ids.new_gid()
        version = _now()
        path = f"{project}/2026-12/{body.split()[0]}-{gid}.md"
        self.rows[gid] = markdown.Document(
            gid, "observation", project, path, _text(gid, "observation", version, body), version
        )
        return gid

    def forget(self, gid: str) -> None:
        old = self.rows.pop(gid)
        version = _now()
        self.rows[gid] = markdown.Document(
            gid,
            "tombstone",
            old.project,
            f"{old.project}/forgotten/{gid}.md",
            _text(gid, "tombstone", version, "forgotten"),
            version,
        )

    def body(self, gid: str) -> str:
        doc = self.rows[gid]
        return "" if doc.kind == "tombstone" else doc.text.split("---\n")[2].strip()

    def documents(
        self, *, project: str = "", changed_since: datetime | None = None, for_sync: bool = False
    ) -> Iterator[markdown.Document]:
        since = changed_since.isoformat() if changed_since else ""
        for doc in list(self.rows.values()):
            if not since or doc.version > since:
                yield doc

    def import_files(self, files: object, *, source: str) -> object:
        parsed = []
        for name, data in files:  # type: ignore[attr-defined]
            try:
                _, front, body = data.decode().split("---\n", 2)
                meta = dict(line.split(": ", 1) for line in front.strip().splitlines())
            except ValueError:
                raise merge.MarkdownImportError(f"{name}: no front matter") from None
            parsed.append((name, meta, data.decode()))
        self.imports += 1
        for name, meta, text in parsed:  # all or nothing: every file parsed first
            mine = self.rows.get(meta["gid"])
            if mine is None or meta["version"] > mine.version or meta["kind"] == "tombstone":
                self.rows[meta["gid"]] = markdown.Document(
                    meta["gid"], meta["kind"], "secretproj", name, text, meta["version"]
                )
        return _Report()


class _Report:
    def describe(self) -> str:
        return "imported"


@pytest.fixture
def remote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # no git identity anywhere
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    return str(bare)


@pytest.fixture
def machines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, FakeMemory]]:
    yield {"a": FakeMemory(), "b": FakeMemory()}


@contextmanager
def on(machine: str, memory: FakeMemory, tmp_path: Path) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        data = tmp_path / machine
        data.mkdir(mode=0o700, exist_ok=True)
        mp.setenv("CLAUDE_MEM_DATA_DIR", str(data))
        mp.setattr(markdown, "documents", memory.documents)
        mp.setattr(merge, "import_files", memory.import_files)
        mp.setattr(layout, "blobs_in", lambda repo, sealer: 0)
        yield


def _tree(remote: str) -> list[str]:
    done = subprocess.run(
        ["git", "--git-dir", remote, "ls-tree", "-r", "--name-only", "main"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


def _commits(remote: str) -> int:
    done = subprocess.run(
        ["git", "--git-dir", remote, "rev-list", "--count", "main"],
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


def test_two_machines_exchange_edits_and_a_second_sync_changes_nothing(
    remote: str, machines: dict[str, FakeMemory], tmp_path: Path
) -> None:
    a, b = machines["a"], machines["b"]
    first = a.add("alpha one")
    with on("a", a, tmp_path):
        said = sync_configure(remote=remote, encrypt=False)
        assert any("not encrypted" in line for line in said)
        report = sync_run()
        assert report.pushed and report.outgoing.new == 1
    with on("b", b, tmp_path):
        sync_configure(remote=remote, encrypt=False)
        assert sync_run().incoming == 1
        assert b.body(first) == "alpha one"
        b.add("beta two")
        b.rows[first] = b.rows[first]  # unchanged
        assert sync_run().outgoing.new == 1
    with on("a", a, tmp_path):
        sync_run()
        assert len(a.rows) == 2
        commits = _commits(remote)
        again = sync_run()
        assert not again.pushed and _commits(remote) == commits
    with on("b", b, tmp_path):
        assert not sync_run().pushed and _commits(remote) == commits


def test_the_later_edit_wins_on_both_machines(
    remote: str, machines: dict[str, FakeMemory], tmp_path: Path
) -> None:
    a, b = machines["a"], machines["b"]
    gid = a.add("shared first")
    with on("a", a, tmp_path):
        sync_configure(remote=remote, encrypt=False)
        sync_run()
    with on("b", b, tmp_path):
        sync_configure(remote=remote, encrypt=False)
        sync_run()
    a.add("edited on a", gid=gid)
    b.add("edited on b later", gid=gid)  # the later version
    with on("a", a, tmp_path):
        sync_run()
    with on("b", b, tmp_path):
        sync_run()
    with on("a", a, tmp_path):
        sync_run()
    assert a.body(gid) == b.body(gid) == "edited on b later"
    # The moved path (a new title) left no second file of the same memory behind.
    assert sum(gid in name for name in _tree(remote)) == 1


def test_a_tombstone_removes_the_memory_on_the_other_machine_and_in_the_remote(
    remote: str, machines: dict[str, FakeMemory], tmp_path: Path
) -> None:
    a, b = machines["a"], machines["b"]
    gid = a.add("doomed memory")
    with on("a", a, tmp_path):
        sync_configure(remote=remote, encrypt=False)
        sync_run()
    with on("b", b, tmp_path):
        sync_configure(remote=remote, encrypt=False)
        sync_run()
    a.forget(gid)
    with on("a", a, tmp_path):
        assert sync_run().outgoing.tombstones == 1
    assert [name for name in _tree(remote) if gid in name] == [f"secretproj/forgotten/{gid}.md"]
    with on("b", b, tmp_path):
        sync_run()
    assert b.rows[gid].kind == "tombstone"


def test_an_encrypted_remote_shows_no_names_and_needs_the_key(
    remote: str, machines: dict[str, FakeMemory], tmp_path: Path
) -> None:
    a, b = machines["a"], machines["b"]
    gid = a.add("sealed secret")
    with on("a", a, tmp_path):
        said = sync_configure(remote=remote, encrypt=True)
        assert not any("not encrypted" in line for line in said)
        sync_run()
        key = crypto.key_text()
        assert oct((tmp_path / "a" / "sync" / "key").stat().st_mode & 0o777) == "0o600"
    names = _tree(remote)
    year = str(datetime.now(UTC).year)
    assert names and not any("secretproj" in n or year in n or gid in n for n in names)
    blob = subprocess.run(
        ["git", "--git-dir", remote, "show", f"main:{names[-1]}"], capture_output=True, check=True
    ).stdout
    assert b"secretproj" not in blob and b"sealed secret" not in blob
    with on("b", b, tmp_path):
        with pytest.raises(SyncError, match="encrypted"):
            sync_configure(remote=remote, encrypt=False)
            sync_run()
        assert not b.rows
        sync_configure(remote=remote, encrypt=False, key=crypto.key_generate())
        with pytest.raises(SyncError, match="another key"):
            sync_run()
        assert not b.rows and b.imports == 0
        sync_configure(remote=remote, encrypt=False, key=key)
        sync_run()
        assert b.body(gid) == "sealed secret"
        b.add("from b sealed", gid=gid)
        sync_run()
    with on("a", a, tmp_path):
        sync_run()
        assert a.body(gid) == "from b sealed"
        assert not sync_run().pushed


def test_a_remote_that_refuses_the_push_changes_nothing_and_the_next_sync_pushes(
    remote: str, machines: dict[str, FakeMemory], tmp_path: Path
) -> None:
    a = machines["a"]
    a.add("refused first")
    hook = Path(remote) / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'no pushes today' >&2\nexit 1\n")
    hook.chmod(0o755)
    with on("a", a, tmp_path):
        sync_configure(remote=remote, encrypt=False)
        with pytest.raises(SyncError, match="refused the push.*no pushes today"):
            sync_run()
        assert state_load().commit == "" and state_load().watermark == ""
        hook.unlink()
        assert sync_run().outgoing.new == 1
    assert len(_tree(remote)) == 2  # the manifest and the memory


def test_a_corrupted_file_in_the_remote_stops_the_sync_before_anything(
    remote: str, machines: dict[str, FakeMemory], tmp_path: Path
) -> None:
    a, b = machines["a"], machines["b"]
    a.add("good memory")
    with on("a", a, tmp_path):
        sync_configure(remote=remote, encrypt=False)
        sync_run()
    vandal = tmp_path / "vandal"
    subprocess.run(["git", "clone", "-q", "-b", "main", remote, str(vandal)], check=True)
    (vandal / "secretproj" / "garbage.md").write_bytes(b"\x00\xffnot markdown")
    env = {"GIT_AUTHOR_NAME": "v", "GIT_AUTHOR_EMAIL": "v@x", "GIT_COMMITTER_NAME": "v"}
    env |= {"GIT_COMMITTER_EMAIL": "v@x", "HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    for args in (["add", "-A"], ["commit", "-qm", "garbage"], ["push", "-q"]):
        subprocess.run(["git", "-C", str(vandal), *args], check=True, env=env)
    b.add("b's own")
    with on("b", b, tmp_path):
        sync_configure(remote=remote, encrypt=False)
        commits = _commits(remote)
        with pytest.raises(SyncError, match="garbage.md"):
            sync_run()
        assert len(b.rows) == 1 and b.imports == 0  # nothing half-imported
        assert _commits(remote) == commits and state_load().commit == ""


def test_a_remote_that_is_not_git_is_refused_and_nothing_is_saved(
    tmp_path: Path, machines: dict[str, FakeMemory], remote: str
) -> None:
    with on("a", machines["a"], tmp_path):
        with pytest.raises(SyncError, match="not a git repository"):
            sync_configure(remote=str(tmp_path / "nothing-here"), encrypt=False)
        assert engine.remote_configured() == ""


def test_a_push_overtaken_by_another_machine_is_retried_on_the_newer_head(
    remote: str, machines: dict[str, FakeMemory], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = machines["a"], machines["b"]
    with on("b", b, tmp_path):
        sync_configure(remote=remote, encrypt=False)
    b_gid = b.add("b sneaks in")
    a_gid = a.add("a slow")
    pause = engine._pause
    raced = []

    def race(stage: str) -> None:
        if stage == "committed" and not raced:
            raced.append(stage)
            with on("b", b, tmp_path):
                sync_run()
        pause(stage)

    with on("a", a, tmp_path):
        sync_configure(remote=remote, encrypt=False)
        monkeypatch.setattr(engine, "_pause", race)
        report = sync_run()
    assert raced and report.attempts == 2 and a.body(b_gid) == "b sneaks in"
    with on("b", b, tmp_path):
        sync_run()
    assert b.body(a_gid) == "a slow"


def test_many_moved_files_leave_no_old_copy_behind(
    remote: str, machines: dict[str, FakeMemory], tmp_path: Path
) -> None:
    a = machines["a"]
    gids = [a.add(f"first{n} title") for n in range(layout.GREP_MAX_GIDS + 6)]
    with on("a", a, tmp_path):
        sync_configure(remote=remote, encrypt=False)
        sync_run()
        for n, gid in enumerate(gids):  # new titles, so new paths: found by a full scan
            a.add(f"second{n} title", gid=gid)
        assert sync_run().outgoing.changed == len(gids)
    names = _tree(remote)
    assert len(names) == len(gids) + 1 and all("second" in n for n in names if n.endswith(".md"))


def test_a_dry_run_counts_both_ways_and_changes_nothing(
    remote: str, machines: dict[str, FakeMemory], tmp_path: Path
) -> None:
    a, b = machines["a"], machines["b"]
    a.add("from a")
    with on("a", a, tmp_path):
        sync_configure(remote=remote, encrypt=False)
        sync_run()
    gone = b.add("to forget")
    b.add("from b")
    b.forget(gone)
    with on("b", b, tmp_path):
        plan = sync_run(remote=remote, dry_run=True)
        assert (plan.incoming, plan.outgoing.new, plan.outgoing.tombstones) == (1, 1, 1)
        assert "would be pushed" in plan.describe()
        assert state_load().commit == "" and engine.remote_configured() == ""
    assert b.imports == 0 and _commits(remote) == 1


def test_deliverables_bytes_travel_only_when_allowed_and_small_enough(
    remote: str,
    machines: dict[str, FakeMemory],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    a, b = machines["a"], machines["b"]
    small, big = b"small file", b"x" * 100
    files = {"small": small, "big": big}
    landed: dict[str, bytes] = {}
    for name in files:
        gid = global_ids.new_gid()
        version = _now()
        a.rows[gid] = markdown.Document(
            gid,
            "deliverable",
            "secretproj",
            f"secretproj/2026-12/file-{name}-{gid}.md",
            _text(gid, "deliverable", version, name),
            version,
        )
    by_gid = {gid: files[doc.text.split("---\n")[2].strip()] for gid, doc in a.rows.items()}
    src = tmp_path / "src"
    src.mkdir()

    def file_of(gid: str) -> tuple[Path, str, int]:
        path = src / gid
        path.write_bytes(by_gid[gid])
        return path, hashlib.sha256(by_gid[gid]).hexdigest(), len(by_gid[gid])

    store = extensions.FileStore(
        kind="deliverable",
        file_of=file_of,
        missing=lambda: [(g, hashlib.sha256(d).hexdigest()) for g, d in by_gid.items()],
        put=lambda gid, data: bool(landed.setdefault(gid, data)),
    )
    monkeypatch.setattr(extensions, "_file_stores", {"deliverable": store})
    monkeypatch.setenv("CLAUDE_MEM_SYNC_DELIVERABLES", "true")
    monkeypatch.setenv("CLAUDE_MEM_SYNC_DELIVERABLES_MAX_BYTES", "50")
    with on("a", a, tmp_path):
        sync_configure(remote=remote, encrypt=True)
        assert sync_run().outgoing.blobs == 1  # the big one stays here
        key = crypto.key_text()
    with on("b", b, tmp_path), pytest.MonkeyPatch.context() as mp:
        mp.setattr(layout, "blobs_in", _real_blobs_in)
        sync_configure(remote=remote, encrypt=False, key=key)
        sync_run()
    assert list(landed.values()) == [small]


_real_blobs_in = layout.blobs_in


def test_git_runs_with_its_own_identity_and_never_at_another_repository(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GIT_DIR", "/elsewhere/.git")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "someone")
    monkeypatch.setenv("GIT_SSL_CAINFO", "/etc/ca.pem")
    env = git.git_env()
    assert "GIT_DIR" not in env and env["GIT_SSL_CAINFO"] == "/etc/ca.pem"
    assert (env["GIT_AUTHOR_NAME"], env["GIT_COMMITTER_EMAIL"]) == ("cmem", "cmem@localhost")
    assert env["GIT_TERMINAL_PROMPT"] == "0"
