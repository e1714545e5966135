"""Comments and docs point only inside the repository: every `docs/….md` the application code
names exists, and nothing cites the source documents that never were in it (what the code
takes from them is restated under docs/reference/)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support import REPO

CODE = ("cmem_site", "memory", "deliverables")
# The pages of this site, and the old build-phase layout they replaced (docs/02-….md,
# docs/agents/…), so a stale pointer fails too; other `docs/…` strings are test data.
DOC_PATH = re.compile(
    r"docs/(?:(?:guide|reference|design|benchmarks|history|agents)/[\w./-]+?|\d\d-[\w.-]+?"
    r"|architecture|development|changelog|index|SECURITY|RELIABILITY|lean-worker-history)\.md"
)
OUTSIDE = re.compile(
    r"shared/(?:spec|fixtures)|\.\./shared|seeds?/0\d\d|\bseed 00\d|measured-anchors|claude-mem-upstream",
    re.I,
)


def _texts() -> list[tuple[Path, str]]:
    files = [p for package in CODE for p in (REPO / package).rglob("*.py")]
    files += [*(REPO / "static").rglob("*.js"), *(REPO / "templates").rglob("*.html")]
    files += [REPO / "pyproject.toml", REPO / "Makefile", REPO / "README.md", REPO / ".ci" / "run"]
    files += sorted((REPO / "docs").rglob("*.md"))
    return [(path, path.read_text()) for path in files]


def test_every_docs_page_the_code_names_exists() -> None:
    missing = [
        f"{path.relative_to(REPO)}: {name}"
        for path, text in _texts()
        if path.suffix != ".md"
        for name in DOC_PATH.findall(text)
        if not (REPO / name).is_file()
    ]
    assert not missing, missing


def test_nothing_points_at_documents_outside_the_repository() -> None:
    tests = [(p, p.read_text()) for p in (REPO / "tests").rglob("*.py") if p != Path(__file__)]
    found = [
        f"{path.relative_to(REPO)}: {match.group(0)}"
        for path, text in [*_texts(), *tests]
        for match in OUTSIDE.finditer(text)
    ]
    assert not found, found


def test_the_readme_is_a_front_door() -> None:
    """At most 15 KB, and every page it links to is in the repository (the docs site's own
    links are checked by `make docs`, which fails on a broken one)."""
    readme = (REPO / "README.md").read_text()
    assert len(readme.encode()) <= 15 * 1024
    links = re.findall(r"\]\(((?!https?://|#)[^)#\s]+)", readme)
    assert links, "the README links to the docs"
    missing = [link for link in links if not (REPO / link).exists()]
    assert not missing, missing
