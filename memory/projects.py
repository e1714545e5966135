"""Project identity and exclusion.

A project is the repository, not the folder: every worktree of one repo shares the git
common dir, so they share one memory. Outside git, the folder is the project.
"""

from __future__ import annotations

import fnmatch
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from memory import config
from memory.protocol.netpolicy import is_loopback


@dataclass(frozen=True)
class Project:
    name: str  # the key every row stores
    root: str  # folder the project's paths are relative to ("" when unknown)


def _git_common_dir(start: Path) -> Path | None:
    """The repository's common git dir, found by walking up (no `git` subprocess: hooks are hot)."""
    for folder in (start, *start.parents):
        dotgit = folder / ".git"
        if dotgit.is_dir():
            return dotgit
        if dotgit.is_file():
            # A worktree or submodule: `.git` is a file `gitdir: <path>`; the worktree's gitdir
            # has a `commondir` file pointing at the main repository's .git.
            try:
                text = dotgit.read_text(errors="replace").strip()
            except OSError:
                return None
            if not text.startswith("gitdir:"):
                return None
            gitdir = (folder / text.split(":", 1)[1].strip()).resolve()
            common = gitdir / "commondir"
            if common.is_file():
                try:
                    return (gitdir / common.read_text().strip()).resolve()
                except OSError:
                    return gitdir
            return gitdir
    return None


@lru_cache(maxsize=256)
def _project_for(cwd: str, identity: str = "local") -> Project:
    if not cwd:
        return Project(name="unknown", root="")
    path = Path(cwd)
    common = _git_common_dir(path)
    if common is not None:
        root = common.parent if common.name == ".git" else common
        worktree_root = _worktree_root(path)
        remote = git_remote_identity(common) if identity == "remote" else None
        return Project(name=remote or root.name or "root", root=str(worktree_root or root))
    return Project(name=path.name or "root", root=str(path))


# Team mode: teammates' clones live in different folders (often with different names), but
# share the remote, so the normalised remote URL is the project: `github.com/org/repo`.
_SCP_LIKE = re.compile(r"^(?:[^@/\s]+@)?(?P<host>[^:/\s]+):(?!//)(?P<path>.+)$")


def normalise_remote_url(url: str) -> str | None:
    """`git@github.com:org/repo.git`, `https://u:p@github.com/org/repo/` -> `github.com/org/repo`.

    Credentials, ports, the scheme and `.git` go; the host is lower-cased. Local paths and
    file:// remotes name no shared place, so they give None.
    """
    url = url.strip()
    if not url:
        return None
    if "://" in url:
        scheme, rest = url.split("://", 1)
        if scheme.lower() == "file":
            return None
        hostpart, _, path = rest.partition("/")
        host = hostpart.rsplit("@", 1)[-1]
        host = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    else:
        match = _SCP_LIKE.match(url)
        if not match or "/" in match.group("host") or len(match.group("host")) < 2:
            return None  # a local path such as /srv/git/repo.git, ../repo or C:/repo
        host, path = match.group("host"), match.group("path")
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    path = path.strip("/")
    if not host or not path:
        return None
    return f"{host.lower()}/{path}"


def git_remote_identity(common_dir: Path) -> str | None:
    """The normalised URL of `origin` (else the first remote) in `<common dir>/config`."""
    try:
        text = (common_dir / "config").read_text(errors="replace")
    except OSError:
        return None
    urls: dict[str, str] = {}
    section = ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]").strip()
            continue
        key, sep, value = line.partition("=")
        if sep and key.strip().lower() == "url" and section.startswith("remote "):
            urls.setdefault(section[len("remote ") :].strip().strip('"'), value.strip().strip('"'))
    for name in ("origin", *urls):
        identity = normalise_remote_url(urls.get(name, ""))
        if identity:
            return identity
    return None


def identity_mode(settings: dict[str, str] | None = None) -> str:
    """remote in team mode (a shared database) unless settings say otherwise, else local.
    `settings`: the request's config.load(), when the caller has it (one load a request)."""
    settings = settings if settings is not None else config.load()
    mode = config.project_identity(settings)
    if mode in {"local", "remote"}:
        return mode
    return "remote" if config.database_url(settings).strip() else "local"


# A remote hook client computes the project on the developer's machine (the worker cannot
# read that disk) and sends it along; the hook request runs inside this scope.
_client_project: ContextVar[Project | None] = ContextVar("cmem_client_project", default=None)


@contextmanager
def client_project_scope(claim: object) -> Iterator[None]:
    """Use the client's `{"name", "root"}` claim for cwds inside its root during one request."""
    project = None
    if isinstance(claim, dict) and isinstance(claim.get("name"), str) and claim["name"].strip():
        root = claim.get("root") if isinstance(claim.get("root"), str) else ""
        project = Project(
            name=claim["name"].strip()[:200], root=os.path.normpath(root) if root else ""
        )
    token = _client_project.set(project)
    try:
        yield
    finally:
        _client_project.reset(token)


# Set by the token middleware for each request (memory/team/auth.py), which reads the same
# settings once anyway: the hot paths (file facts on every hook) then ask a context variable
# instead of loading the settings again (~0.2 ms a call on a loaded machine).
_request_remote: ContextVar[bool | None] = ContextVar("cmem_request_remote", default=None)


@contextmanager
def request_remote_scope(remote: bool) -> Iterator[None]:
    token = _request_remote.set(remote)
    try:
        yield
    finally:
        _request_remote.reset(token)


def remote_request() -> bool:
    """True while serving a hook of a remote client (team mode): the request named a
    project of its own, or the worker needs tokens (it serves other machines). Then the
    server never reads a path the client named: its disk is not the client's. Outside a
    request (the consumer, the CLI) the settings decide."""
    if _client_project.get() is not None:
        return True
    known = _request_remote.get()
    if known is not None:
        return known
    settings = config.load()
    if config.require_token(settings):
        return True
    return not is_loopback(config.worker_host(settings))


def project_facts(cwd: str) -> dict[str, str]:
    """What a remote hook client sends as `cmem_project` (stdlib only, no Django)."""
    project = _project_for(os.path.normpath(cwd), "remote") if cwd else Project("unknown", "")
    return {"name": project.name, "root": project.root}


def _worktree_root(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def project_for_cwd(cwd: str, settings: dict[str, str] | None = None) -> Project:
    norm = os.path.normpath(cwd) if cwd else ""
    claimed = _client_project.get()
    if claimed is not None and (
        not claimed.root or norm == claimed.root or norm.startswith(claimed.root + os.sep)
    ):
        return claimed
    return _project_for(norm, identity_mode(settings))


def relative_path(path: str, root: str) -> str:
    """Project-relative path when `path` is inside `root`, else the normalised absolute path."""
    if not path:
        return path
    norm = os.path.normpath(path if os.path.isabs(path) or not root else os.path.join(root, path))
    if root:
        root_norm = os.path.normpath(root)
        if norm == root_norm:
            return "."
        if norm.startswith(root_norm + os.sep):
            return norm[len(root_norm) + 1 :].replace(os.sep, "/")
    return norm.replace(os.sep, "/")


def _glob_to_regex(glob: str) -> re.Pattern[str]:
    """claude-mem's glob: `~` home, `**` anything, `*` within a segment, `?` one character."""
    return _expanded_glob_regex(os.path.expanduser(glob.strip()))


@lru_cache(maxsize=256)
def _expanded_glob_regex(glob: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(glob):
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("^" + "".join(out) + "$")


def glob_matches(glob: str, cwd: str) -> bool:
    """A glob matches the full path or its last folder name (as in claude-mem)."""
    full = cwd.replace(os.sep, "/").rstrip("/") or "/"
    base = full.rsplit("/", 1)[-1]
    pattern = _glob_to_regex(glob)
    return bool(pattern.match(full) or pattern.match(base) or fnmatch.fnmatchcase(full, glob))


# The admin's ExcludedProject globs, read once per data dir and kept for a few seconds: every
# hook asks, and the list changes about never. A save or delete in this process drops the
# copy at once (signals); another process's edit (the admin in the web worker, `cmem` CLI)
# is seen after EXCLUDED_GLOBS_TTL_S.
EXCLUDED_GLOBS_TTL_S = 2.0
_db_globs_cache: dict[str, tuple[float, tuple[str, ...]]] = {}


def excluded_globs_invalidate(**_: object) -> None:
    _db_globs_cache.clear()


def _db_excluded_globs() -> tuple[str, ...]:
    key = str(config.data_dir())
    cached = _db_globs_cache.get(key)
    now = time.monotonic()
    if cached is not None and now - cached[0] < EXCLUDED_GLOBS_TTL_S:
        return cached[1]
    try:
        # after django.setup(): the hook client's remote path imports this module without Django
        from django.db.models.signals import post_delete, post_save

        from memory.models import ExcludedProject

        for signal in (post_save, post_delete):
            signal.connect(
                excluded_globs_invalidate,
                sender=ExcludedProject,
                dispatch_uid=f"excluded-globs-{signal is post_save}",
            )
        globs = tuple(ExcludedProject.objects.values_list("glob", flat=True))
    except Exception:  # noqa: BLE001 - before migrations, the admin list simply does not exist yet
        return ()
    _db_globs_cache[key] = (now, globs)
    return globs


def excluded_globs(settings: dict[str, str] | None = None) -> list[str]:
    globs = config.excluded_projects(settings)
    globs += _db_excluded_globs()
    # The observer's own sandbox never becomes a project.
    globs.append(str(config.data_dir() / "**"))
    return globs


def _spellings(path: str) -> list[str]:
    """`path` as given and as resolved (symlinks), each with every ancestor folder: an
    excluded folder excludes everything below it, however the path is spelled."""
    out: list[str] = []
    for spelling in dict.fromkeys([os.path.normpath(path), os.path.realpath(path)]):
        current = spelling
        while True:
            out.append(current)
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
    return list(dict.fromkeys(out))


def is_excluded(
    cwd: str, project: Project | None = None, settings: dict[str, str] | None = None
) -> bool:
    """True when nothing should be stored or shown for this working directory: the cwd, the
    project root, their resolved real paths or any folder above them matches an exclusion.
    `settings`: the request's config.load(), when the caller has it (one load a request)."""
    if not cwd:
        return False
    globs = excluded_globs(settings)
    root = project.root if project and project.root and project.root != cwd else ""
    key = (cwd, root, tuple(globs))
    now = time.monotonic()
    known = _excluded_memo.get(key)
    if known is not None and now - known[0] < EXCLUDED_GLOBS_TTL_S:
        return known[1]
    candidates = _spellings(cwd) + (_spellings(root) if root else [])
    excluded = any(glob_matches(glob, c) for c in dict.fromkeys(candidates) for glob in globs)
    if len(_excluded_memo) > 4096:
        _excluded_memo.clear()
    _excluded_memo[key] = (now, excluded)
    return excluded


# is_excluded's answers for one (cwd, root, exclusion list), kept as long as the admin's
# globs are: every gated Read asks twice (the cwd, the file's folder), and resolving and
# matching every ancestor was a seventh of the gate's decision. A changed list
# is another key; a symlink re-pointed under the same path is seen within the TTL.
_excluded_memo: dict[tuple[str, str, tuple[str, ...]], tuple[float, bool]] = {}


def is_excluded_path(path: str, settings: dict[str, str] | None = None) -> bool:
    """True when a file lies inside an excluded folder (a Read of an excluded project's file
    from another project is not stored either)."""
    return bool(path) and is_excluded(os.path.dirname(os.path.normpath(path)), settings=settings)
