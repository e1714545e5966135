"""Project identity and exclusion.

A project is the repository, not the folder: every worktree of one repo shares the git
common dir, so they share one memory. Outside git, the folder is the project.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from memory import config


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
def _project_for(cwd: str) -> Project:
    if not cwd:
        return Project(name="unknown", root="")
    path = Path(cwd)
    common = _git_common_dir(path)
    if common is not None:
        root = common.parent if common.name == ".git" else common
        worktree_root = _worktree_root(path)
        return Project(name=root.name or "root", root=str(worktree_root or root))
    return Project(name=path.name or "root", root=str(path))


def _worktree_root(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def project_for_cwd(cwd: str) -> Project:
    return _project_for(os.path.normpath(cwd) if cwd else "")


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
    glob = os.path.expanduser(glob.strip())
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


def excluded_globs() -> list[str]:
    globs = config.get_list("CLAUDE_MEM_EXCLUDED_PROJECTS")
    try:
        from memory.models import ExcludedProject

        globs += list(ExcludedProject.objects.values_list("glob", flat=True))
    except Exception:  # noqa: BLE001 - before migrations, the admin list simply does not exist yet
        pass
    # The observer's own sandbox never becomes a project.
    globs.append(str(config.data_dir() / "**"))
    return globs


def is_excluded(cwd: str, project: Project | None = None) -> bool:
    """True when nothing should be stored or shown for this working directory."""
    if not cwd:
        return False
    candidates = [cwd]
    if project and project.root and project.root != cwd:
        candidates.append(project.root)
    return any(glob_matches(glob, c) for glob in excluded_globs() for c in candidates)
