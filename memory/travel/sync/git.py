"""Every git call of sync: a subprocess with an explicit environment and a timeout.

The environment sets the identity (cmem <cmem@localhost>) so a machine with no git
identity configured can commit, and never prompts (GIT_TERMINAL_PROMPT=0, ssh in batch
mode): a sync runs in the background, where a prompt would hang it. The user's global
config stays readable on purpose: an https credential helper or an ssh `insteadOf` lives
there. What could change the bytes or block a commit (hooks, signing, line endings) is
switched off per call with `-c`.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

# Network calls (fetch, push, ls-remote) may be slow; local ones never should be.
NETWORK_TIMEOUT_S = 300.0
LOCAL_TIMEOUT_S = 120.0
IDENTITY = {
    "GIT_AUTHOR_NAME": "cmem",
    "GIT_AUTHOR_EMAIL": "cmem@localhost",
    "GIT_COMMITTER_NAME": "cmem",
    "GIT_COMMITTER_EMAIL": "cmem@localhost",
}
# Per-call config that makes a commit independent of the user's settings.
_CONFIG = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "commit.gpgSign=false",
    "-c", "core.autocrlf=false",
    "-c", "core.quotePath=false",
    "-c", "core.fsmonitor=false",
    "-c", "gc.auto=0",
    "-c", "init.defaultBranch=main",
)  # fmt: skip


# Seconds spent waiting for git in this process: the benchmark splits a sync's time into
# git's own and cmem's with it (a counter, not a profiler, so it costs nothing).
spent = [0.0]


class GitError(RuntimeError):
    """A git call that failed; the message is git's own last lines."""


@dataclass(frozen=True)
class Result:
    stdout: bytes
    stderr: str
    returncode: int


# Variables that would point git at another repository or config than the clone's (set
# when cmem runs inside a git hook, say), or make it ask for a password in a window.
_DROPPED = frozenset(
    {
        "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX",
        "GIT_CONFIG", "GIT_ASKPASS",
    }
)  # fmt: skip


def git_env() -> dict[str, str]:
    """The user's environment (ssh agent, CA bundle: what reaching the remote may need)
    minus what would redirect git, plus sync's identity and no prompts."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in _DROPPED
        and not k.startswith("GIT_CONFIG_")
        and not k.startswith("GIT_AUTHOR_")
        and not k.startswith("GIT_COMMITTER_")
    }
    env.update(IDENTITY)
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    # An ssh remote must fail rather than ask for a passphrase nobody will type.
    env["GIT_SSH_COMMAND"] = os.environ.get("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    env["LC_ALL"] = "C"  # git's messages are matched (rejected pushes) in English
    return env


def run(
    repo: Path,
    *args: str,
    network: bool = False,
    check: bool = True,
    stdin: bytes | None = None,
) -> Result:
    """Run `git args` in `repo`; GitError (git's message) when it fails and `check`."""
    timeout = NETWORK_TIMEOUT_S if network else LOCAL_TIMEOUT_S
    started = time.perf_counter()
    try:
        done = subprocess.run(
            ["git", *_CONFIG, *args],
            cwd=repo,
            env=git_env(),
            input=stdin,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]} took longer than {timeout:.0f} s") from None
    except FileNotFoundError:
        raise GitError("git is not installed (sync needs the git program on PATH)") from None
    finally:
        spent[0] += time.perf_counter() - started
    stderr = done.stderr.decode(errors="replace").strip()
    if check and done.returncode != 0:
        tail = " | ".join(stderr.splitlines()[-4:]) or f"exit {done.returncode}"
        raise GitError(f"git {args[0]} failed: {tail}")
    return Result(stdout=done.stdout, stderr=stderr, returncode=done.returncode)


def text(repo: Path, *args: str, network: bool = False) -> str:
    return run(repo, *args, network=network).stdout.decode().strip()
