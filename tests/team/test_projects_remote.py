"""Shared projects: teammates' clones are one project, named by the normalised remote URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory import projects
from memory.projects import (
    client_project_scope,
    normalise_remote_url,
    project_facts,
    project_for_cwd,
)

pytestmark = pytest.mark.team


@pytest.mark.parametrize(
    "url,identity",
    [
        ("git@github.com:org/repo.git", "github.com/org/repo"),
        ("https://github.com/org/repo", "github.com/org/repo"),
        ("https://github.com/org/repo.git/", "github.com/org/repo"),
        ("https://alice:s3cret@GitHub.com/org/repo.git", "github.com/org/repo"),
        ("ssh://git@github.com:22/org/repo.git", "github.com/org/repo"),
        ("git@gitlab.example.com:group/sub/repo.git", "gitlab.example.com/group/sub/repo"),
        ("/srv/git/repo.git", None),
        ("file:///srv/git/repo.git", None),
        ("../repo", None),
        ("C:/src/repo", None),
        ("", None),
    ],
)
def test_normalise_remote_url(url: str, identity: str | None) -> None:
    assert normalise_remote_url(url) == identity


def _clone(folder: Path, remotes: dict[str, str]) -> Path:
    git = folder / ".git"
    git.mkdir(parents=True)
    lines = ["[core]", "\tbare = false"]
    for name, url in remotes.items():
        lines += [
            f'[remote "{name}"]',
            f"\turl = {url}",
            f"\tfetch = +refs/heads/*:refs/remotes/{name}/*",
        ]
    (git / "config").write_text("\n".join(lines) + "\n")
    return folder


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    projects._project_for.cache_clear()


def test_clones_with_one_remote_are_one_project_in_team_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = _clone(tmp_path / "alice" / "app", {"origin": "git@github.com:acme/app.git"})
    bob = _clone(tmp_path / "bob" / "acme-app-checkout", {"origin": "https://github.com/acme/app"})
    (bob / "src").mkdir()
    monkeypatch.setenv("CLAUDE_MEM_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/cmem")

    a, b = project_for_cwd(str(alice)), project_for_cwd(str(bob / "src"))

    assert a.name == b.name == "github.com/acme/app"
    assert (a.root, b.root) == (str(alice), str(bob))


def test_local_identity_without_team_mode_or_remote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLAUDE_MEM_DATABASE_URL", raising=False)  # the PostgreSQL test run sets it
    clone = _clone(tmp_path / "app", {"origin": "git@github.com:acme/app.git"})
    assert project_for_cwd(str(clone)).name == "app"  # single-user default: the folder
    monkeypatch.setenv("CLAUDE_MEM_PROJECT_IDENTITY", "remote")
    assert project_for_cwd(str(clone)).name == "github.com/acme/app"
    no_remote = _clone(tmp_path / "scratch", {})
    assert project_for_cwd(str(no_remote)).name == "scratch"  # falls back to the local identity
    monkeypatch.setenv("CLAUDE_MEM_DATABASE_URL", "postgres://x@127.0.0.1/cmem")
    monkeypatch.setenv("CLAUDE_MEM_PROJECT_IDENTITY", "local")
    assert project_for_cwd(str(clone)).name == "app"


def test_origin_wins_and_other_remotes_are_a_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_PROJECT_IDENTITY", "remote")
    both = _clone(
        tmp_path / "both",
        {"upstream": "git@github.com:up/app.git", "origin": "git@github.com:me/app.git"},
    )
    only_upstream = _clone(tmp_path / "up", {"upstream": "git@github.com:up/app.git"})
    assert project_for_cwd(str(both)).name == "github.com/me/app"
    assert project_for_cwd(str(only_upstream)).name == "github.com/up/app"


def test_a_worktree_reads_the_common_dirs_remote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_MEM_PROJECT_IDENTITY", "remote")
    main = _clone(tmp_path / "main", {"origin": "git@github.com:acme/app.git"})
    gitdir = main / ".git" / "worktrees" / "feature"
    gitdir.mkdir(parents=True)
    (gitdir / "commondir").write_text("../..\n")
    tree = tmp_path / "feature"
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {gitdir}\n")
    project = project_for_cwd(str(tree))
    assert project.name == "github.com/acme/app"
    assert project.root == str(tree)


def test_a_remote_clients_claim_names_the_project_during_its_request(tmp_path: Path) -> None:
    claim = {"name": "github.com/acme/app", "root": "/home/alice/src/app"}
    with client_project_scope(claim):
        assert project_for_cwd("/home/alice/src/app/pkg").name == "github.com/acme/app"
        assert project_for_cwd("/home/alice/src/app").root == "/home/alice/src/app"
        # A cwd outside the claimed root is not covered by the claim.
        assert project_for_cwd(str(tmp_path)).name == tmp_path.name
    assert project_for_cwd("/home/alice/src/app/pkg").name == "pkg"
    with client_project_scope({"name": ""}):
        assert project_for_cwd("/home/alice/src/app").name == "app"


def test_project_facts_is_what_a_remote_client_sends(tmp_path: Path) -> None:
    clone = _clone(tmp_path / "x", {"origin": "git@github.com:acme/app.git"})
    assert project_facts(str(clone)) == {"name": "github.com/acme/app", "root": str(clone)}
