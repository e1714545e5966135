"""`cmem sync` end to end (issue 34): two data dirs play two machines, each driven by real
`cmem` processes, through a real bare git repository. HOME is an empty folder, so git
has no identity of the user's: sync brings its own."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support import CMEM, make_worker_env

pytestmark = pytest.mark.slow

_ROWS = (
    "import json; from memory.models import Observation as O, ObservationRevision as R;"
    "print(json.dumps({o.gid: [o.pk, o.title, o.narrative, "
    "[json.dumps([r.before, r.after]) for r in R.objects.filter(observation=o)]]"
    " for o in O.objects.all()}))"
)


def _cmem(env: dict[str, str], *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [CMEM, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    if ok:
        assert done.returncode == 0, f"cmem {' '.join(args)}: {done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated data dir that every machine starts as a copy of (migrate costs seconds)."""
    data = tmp_path_factory.mktemp("template") / "data"
    data.mkdir(mode=0o700)
    env = make_worker_env(data, 9, CMEM_NO_SPAWN="1")
    _cmem(env, "migrate", "-v", "0")
    return data


def _machine(tmp_path: Path, template: Path, name: str, **extra: str) -> dict[str, str]:
    data = tmp_path / name
    shutil.copytree(template, data)
    home = tmp_path / f"home-{name}"
    home.mkdir()
    env = make_worker_env(data, 9, HOME=str(home), CMEM_NO_SPAWN="1", **extra)
    env.pop("XDG_CONFIG_HOME", None)
    return env


def _rows(env: dict[str, str]) -> dict[str, list[object]]:
    out = _cmem(env, "manage", "shell", "-c", _ROWS).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


def _remember(env: dict[str, str], title: str) -> None:
    _cmem(env, "remember", title, "Why: it matters.", "--project", "shop")


@pytest.fixture
def remote(tmp_path: Path) -> str:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    return str(bare)


def _ls_tree(remote: str) -> list[str]:
    return subprocess.run(
        ["git", "--git-dir", remote, "ls-tree", "-r", "--name-only", "main"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()


def test_edits_conflicts_and_forget_travel_between_two_machines(
    tmp_path: Path, remote: str, migrated: Path
) -> None:
    a, b = _machine(tmp_path, migrated, "a"), _machine(tmp_path, migrated, "b")
    _remember(a, "Prices are stored in cents")
    first = _cmem(a, "sync", "--remote", remote).stdout
    assert "not encrypted" in first and "out: 2 new" in first  # the memory and its session
    _remember(b, "Deploys go through the staging branch")
    _cmem(b, "sync", "--remote", remote)
    _cmem(a, "sync")
    on_a, on_b = _rows(a), _rows(b)
    assert sorted(str(r[1]) for r in on_a.values()) == sorted(str(r[1]) for r in on_b.values())
    [gid] = [g for g, r in on_a.items() if "cents" in str(r[1])]

    # The same memory edited on both machines: b's edit is the later one.
    _cmem({**a, "EDITOR": "sed -i s/cents/cents-on-a/"}, "edit", str(on_a[gid][0]))
    time.sleep(0.05)
    _cmem({**b, "EDITOR": "sed -i s/cents/cents-on-b/"}, "edit", str(on_b[gid][0]))
    _cmem(a, "sync")
    _cmem(b, "sync")
    _cmem(a, "sync")
    on_a, on_b = _rows(a), _rows(b)
    assert on_a[gid][1] == on_b[gid][1] == "Prices are stored in cents-on-b"
    assert any("cents-on-a" in change for change in on_a[gid][3])  # kept in history
    assert any("cents-on-a" in change for change in on_b[gid][3])

    # Nothing changed: a sync pushes nothing.
    assert "nothing to push" in _cmem(b, "sync").stdout

    # Forget on one machine: gone on both, and from the remote's current tree.
    _cmem(b, "forget", "--ids", str(on_b[gid][0]), "--yes")
    assert "1 tombstone" in _cmem(b, "sync").stdout
    _cmem(a, "sync")
    left = _rows(a)
    assert gid not in left and len(left) == 1
    assert [name for name in _ls_tree(remote) if gid in name] == [f"shop/forgotten/{gid}.md"]


def test_a_killed_sync_loses_nothing_and_duplicates_nothing(
    tmp_path: Path, remote: str, migrated: Path
) -> None:
    a, b = _machine(tmp_path, migrated, "a"), _machine(tmp_path, migrated, "b")
    _remember(a, "Killed mid-sync")
    _cmem(a, "sync", "--remote", remote)
    _remember(a, "Second memory")
    _cmem(b, "sync", "--remote", remote)
    for stage in ("imported", "pushed"):
        _remember(a, f"Written before a kill at {stage}")
        proc = subprocess.Popen(
            [CMEM, "sync"],
            env={**a, "CMEM_SYNC_PAUSE": stage},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stderr is not None
        assert f"paused at {stage}" in proc.stderr.readline()
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=10)
    _cmem(a, "sync")
    _cmem(b, "sync")
    _cmem(a, "sync")
    titles_a = sorted(str(r[1]) for r in _rows(a).values())
    titles_b = sorted(str(r[1]) for r in _rows(b).values())
    assert titles_a == titles_b and len(titles_a) == len(set(titles_a)) == 4
    assert "nothing to push" in _cmem(a, "sync").stdout


def test_encrypted_remote_opaque_names_and_the_key(
    tmp_path: Path, remote: str, migrated: Path
) -> None:
    a, b = _machine(tmp_path, migrated, "a"), _machine(tmp_path, migrated, "b")
    _remember(a, "A sealed memory")
    said = _cmem(a, "sync", "--remote", remote, "--encrypt").stdout
    assert "not encrypted" not in said and "Made an encryption key" in said
    names = _ls_tree(remote)
    year = time.strftime("%Y")
    assert names and not any("shop" in n or year in n for n in names), names
    status = _cmem(a, "sync", "--status").stdout
    assert "encrypted: yes" in status
    refused = _cmem(b, "sync", "--remote", remote, ok=False)
    assert refused.returncode == 1 and "encrypted" in refused.stderr and not _rows(b)
    key = _cmem(a, "sync", "--export-key").stdout.strip()
    (tmp_path / "key.txt").write_text(key)
    _cmem(b, "sync", "--remote", remote, "--key-file", str(tmp_path / "key.txt"))
    assert [r[1] for r in _rows(b).values()] == ["A sealed memory"]


def test_a_broken_file_in_the_remote_is_named_and_nothing_is_imported(
    tmp_path: Path, remote: str, migrated: Path
) -> None:
    a, b = _machine(tmp_path, migrated, "a"), _machine(tmp_path, migrated, "b")
    _remember(a, "Fine memory")
    _cmem(a, "sync", "--remote", remote)
    vandal = tmp_path / "vandal"
    subprocess.run(["git", "clone", "-q", "-b", "main", remote, str(vandal)], check=True)
    (vandal / "shop" / "broken.md").write_text("---\ngid: [not: closed\n---\nbody\n")
    env = {**a, "GIT_AUTHOR_NAME": "v", "GIT_AUTHOR_EMAIL": "v@x"}
    env |= {"GIT_COMMITTER_NAME": "v", "GIT_COMMITTER_EMAIL": "v@x"}
    for args in (["add", "-A"], ["commit", "-qm", "broken"], ["push", "-q"]):
        subprocess.run(["git", "-C", str(vandal), *args], check=True, env=env)
    failed = _cmem(b, "sync", "--remote", remote, ok=False)
    assert failed.returncode == 1 and "shop/broken.md" in failed.stderr
    assert not _rows(b)  # nothing half-imported (the fine memory came in the same batch)


def test_setup_from_remote_gives_the_first_session_start_its_index(
    tmp_path: Path, remote: str, migrated: Path
) -> None:
    a = _machine(tmp_path, migrated, "a")
    _remember(a, "Synced before the first session")
    _cmem(a, "sync", "--remote", remote)
    c = _machine(tmp_path, migrated, "c", PATH=f"{Path(CMEM).parent}:/usr/bin:/bin")
    done = _cmem(c, "setup", "--from-remote", remote, "--no-start", ok=False)
    assert "== memory from the remote" in done.stdout, done.stdout + done.stderr
    shown = _cmem(
        c,
        "manage",
        "shell",
        "-c",
        "from memory.briefing.context import context_text; print(context_text(project='shop'))",
    ).stdout
    assert "Synced before the first session" in shown
