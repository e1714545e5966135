"""The lifecycle's runtime room (memory/runtime/processes.py, locks.py, detach.py) against
real processes: a lock whose holder is killed with SIGKILL is free again, discovery takes
only this user's cmem of this data dir, and a whole process group is stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.runtime import locks
from memory.runtime.detach import detached, die_with_parent
from memory.runtime.processes import (
    KILL,
    TERM,
    belongs_here,
    group_alive,
    group_members,
    pid_alive,
    process_cmdline,
    signal_group,
    wait_until,
)
from tests.support import REPO

# A process that holds `path`'s lock through the room, says so, and sleeps until killed.
HOLDER = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from memory.runtime import locks\n"
    "fh = locks.hold(Path(sys.argv[1]))\n"
    "print('held' if fh else 'busy', flush=True)\n"
    "time.sleep(float(sys.argv[2]))\n"
)


def _holder(path: Path, seconds: float = 60) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), str(seconds)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "held"
    return proc


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        signal_group(proc.pid, KILL)
        proc.kill()
        proc.wait()


def test_a_lock_whose_holder_is_killed_with_sigkill_is_free_again(tmp_path: Path) -> None:
    path = tmp_path / "worker.lock"
    path.write_bytes(b"kept\n")
    holder = _holder(path)
    try:
        assert locks.held_elsewhere(path)
        assert locks.hold(path) is None
        with locks.exclusive(path, wait=False) as got:
            assert got is None
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert not locks.held_elsewhere(path)
    fh = locks.hold(path)
    assert fh is not None
    fh.close()
    assert path.read_bytes() == b"kept\n"  # the lock file is neither truncated nor removed


def test_two_opens_in_one_process_contend_and_closing_releases(tmp_path: Path) -> None:
    # flock's rule, which the supervisor and `cmem status` rely on: the lock is the open
    # file's, not the process's.
    path = tmp_path / "worker.lock"
    fh = locks.hold(path)
    assert fh is not None
    assert locks.held_elsewhere(path) and locks.hold(path) is None
    fh.close()
    assert not locks.held_elsewhere(path)


def test_a_waiting_lock_waits_for_the_holder_and_a_timeout_gives_up(tmp_path: Path) -> None:
    path = tmp_path / "sync.lock"
    holder = _holder(path, seconds=0.6)
    try:
        started = time.monotonic()
        with locks.exclusive(path, timeout=0.2) as got:
            assert got is None
        assert time.monotonic() - started >= 0.2
        fd = os.open(path, os.O_RDWR)
        try:
            assert locks.lock(fd, timeout=20)  # the holder exits after 0.6 s
            assert locks.held_elsewhere(path)
            locks.unlock(fd)
        finally:
            os.close(fd)
    finally:
        holder.kill()
        holder.wait()
    with locks.exclusive(path) as got:
        assert got is not None


def _fake_cmem(data_dir: Path, **kwargs: object) -> subprocess.Popen[bytes]:
    # argv[0] `cmem`: what looks_like_cmem takes for ours; the shell stays (`; :`).
    return subprocess.Popen(
        ["cmem", "-c", "sleep 60; :"],
        executable="/bin/sh",
        env={"PATH": "/usr/bin:/bin", "CLAUDE_MEM_DATA_DIR": str(data_dir)},
        start_new_session=True,  # the fixture stops its sleep with it
        **kwargs,  # type: ignore[call-overload]
    )


def test_discovery_takes_our_worker_and_never_another_data_dir_or_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, procs: list[subprocess.Popen[bytes]]
) -> None:
    here, other = tmp_path / "here", tmp_path / "other"
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(here))
    ours = _fake_cmem(here)
    theirs = _fake_cmem(other)
    unrelated = subprocess.Popen(
        ["sleep", "60"], env={"CLAUDE_MEM_DATA_DIR": str(here)}, start_new_session=True
    )
    procs += [ours, theirs, unrelated]
    assert wait_until(lambda: process_cmdline(ours.pid) == ["cmem", "-c", "sleep 60; :"], 5)
    assert belongs_here(ours.pid)
    assert not belongs_here(theirs.pid)  # another data dir's cmem
    assert not belongs_here(unrelated.pid)  # our data dir in its environment, not cmem
    assert not belongs_here(os.getpid())
    signal_group(ours.pid, KILL)
    ours.wait()
    assert not belongs_here(ours.pid) and process_cmdline(ours.pid) is None


@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="needs root to run as nobody")
def test_discovery_never_takes_another_users_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, procs: list[subprocess.Popen[bytes]]
) -> None:
    # Same argv, same data dir in its environment: only the owner differs. Root may read
    # its environment, so the owner is what refuses it.
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(tmp_path))
    stranger = _fake_cmem(tmp_path, user=65534, group=65534, cwd="/")
    procs.append(stranger)
    assert wait_until(lambda: bool(process_cmdline(stranger.pid)), 5)
    assert pid_alive(stranger.pid)
    assert not belongs_here(stranger.pid)


def test_pid_alive_reaps_our_zombie_and_knows_the_dead(
    procs: list[subprocess.Popen[bytes]],
) -> None:
    child = subprocess.Popen(["sleep", "60"])
    procs.append(child)
    assert pid_alive(child.pid)
    child.kill()
    assert wait_until(lambda: not pid_alive(child.pid), 5)  # a zombie until reaped here
    assert not pid_alive(0) and not pid_alive(-1)


def test_a_process_group_is_found_whole_and_stopped_whole(
    procs: list[subprocess.Popen[bytes]],
) -> None:
    # A leader and a grandchild that ignores SIGTERM, in a group of their own (detached()).
    leader = subprocess.Popen(
        ["sh", "-c", "sh -c 'trap \"\" TERM; sleep 60; :' & sleep 60; :"], **detached()
    )
    procs.append(leader)
    assert wait_until(lambda: len(group_members(leader.pid)) >= 4, 5), group_members(leader.pid)
    members = group_members(leader.pid)
    assert leader.pid in members and os.getpid() not in members
    assert all(os.getpgid(pid) == leader.pid for pid in members)
    signal_group(leader.pid, TERM)
    leader.wait(timeout=5)
    # The grandchild shell ignored TERM: the group is alive until KILL.
    assert wait_until(lambda: group_alive(leader.pid), 1)
    signal_group(leader.pid, KILL)
    assert wait_until(lambda: not group_alive(leader.pid), 5)
    assert group_members(leader.pid) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_started_to_die_with_its_parent_does_when_the_parent_is_killed(
    procs: list[subprocess.Popen[bytes]],
) -> None:
    script = (
        "import subprocess, sys, time\n"
        "from memory.runtime.detach import detached, die_with_parent\n"
        "child = subprocess.Popen(['sleep', '60'], preexec_fn=die_with_parent(), **detached())\n"
        "print(child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE)
    procs.append(parent)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    procs_alive = pid_alive(child)
    parent.kill()
    parent.wait()
    assert procs_alive
    assert wait_until(lambda: not pid_alive(child), 5)
    assert die_with_parent is not None


def test_without_process_groups_a_group_is_the_process_and_its_descendants(
    monkeypatch: pytest.MonkeyPatch, procs: list[subprocess.Popen[bytes]]
) -> None:
    # The branch Windows takes (no process groups, no killpg), run here on Linux: it is
    # psutil's descendants and kill(); docs/platforms.md says it never ran on Windows.
    from memory.runtime import processes

    leader = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60; :"], start_new_session=True)
    procs.append(leader)
    outsider = subprocess.Popen(["sleep", "60"], start_new_session=True)
    procs.append(outsider)
    assert wait_until(lambda: len(group_members(leader.pid)) >= 3, 5)
    monkeypatch.setattr(processes, "POSIX", False)
    members = group_members(leader.pid)
    assert leader.pid in members and len(members) >= 3 and outsider.pid not in members
    signal_group(leader.pid, KILL)
    leader.wait(timeout=5)
    assert wait_until(lambda: not group_alive(leader.pid), 5)
    assert pid_alive(outsider.pid)


def test_where_the_environment_is_refused_the_working_directory_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, procs: list[subprocess.Popen[bytes]]
) -> None:
    # macOS refuses to show most processes' environments, the user's own included; psutil
    # then raises AccessDenied, made to happen here on Linux.
    import psutil

    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(here))
    in_here = _fake_cmem(here, cwd=here)
    not_here = _fake_cmem(here, cwd=elsewhere)  # our data dir in its environment only
    procs += [in_here, not_here]
    assert wait_until(lambda: bool(process_cmdline(not_here.pid)), 5)
    assert belongs_here(not_here.pid)  # the environment says so, while it can be read

    def refused(self: psutil.Process) -> dict[str, str]:
        raise psutil.AccessDenied(self.pid)

    monkeypatch.setattr(psutil.Process, "environ", refused)
    assert belongs_here(in_here.pid)
    assert not belongs_here(not_here.pid)
