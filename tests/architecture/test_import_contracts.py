"""The import contracts in pyproject.toml ([tool.importlinter]) hold on the real tree, and
each kind of forbidden import breaks its contract: the tree is copied to a temporary
directory, one import is added to one module, and `lint-imports` runs there."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO

LINT_IMPORTS = str(Path(sys.executable).with_name("lint-imports"))
PACKAGES = ("memory", "deliverables", "cmem_site")


def lint_imports(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # Run from `root`, with only `root` on the path, so grimp reads that tree and no other.
    return subprocess.run(
        [LINT_IMPORTS, "--no-cache", *args],
        cwd=root,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "LANG": "C.UTF-8"},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    for package in PACKAGES:
        shutil.copytree(
            REPO / package, root / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    (root / "tests").mkdir()
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "fakes.py").write_text("")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def inject(root: Path, module: str, line: str) -> None:
    path = root / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = root / module.replace(".", "/") / "__init__.py"
    # At the end of the module: an import anywhere in a module is an import to grimp.
    path.write_text(path.read_text() + f"\n{line}\n")


def test_the_real_tree_keeps_every_contract() -> None:
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
    assert "0 broken." in result.stdout and "BROKEN" not in result.stdout


def test_the_copied_tree_lints_like_the_real_one(tree_copy: Path) -> None:
    """The copy sees the same graph (same files, same contracts) as the checkout."""
    real = lint_imports(REPO)
    copy = lint_imports(tree_copy)
    assert copy.returncode == real.returncode, copy.stdout[-4000:]
    summary = [line for line in real.stdout.splitlines() if line.startswith("Contracts:")]
    assert summary and summary == [
        line for line in copy.stdout.splitlines() if line.startswith("Contracts:")
    ]


@pytest.mark.parametrize(
    ("contract", "module", "line", "expected", "evidence"),
    [
        (
            "memory-not-deliverables",
            "memory.ledger",
            "import deliverables.models",
            "memory never imports deliverables",
            "memory.ledger -> deliverables.models",
        ),
        (
            "hookclient-django",
            "memory.hookclient.client",
            "import django",
            "The hook client never imports Django",
            "memory.hookclient.client -> django",
        ),
        (
            "hookclient-project",
            "memory.hookclient.client",
            "from memory import config",
            "The hook client's fast path imports nothing of the worker",
            "memory.hookclient.client -> memory.config",
        ),
        (
            "hookclient-project",
            "memory.hookclient.entry",
            "from memory import privacy",
            "The hook client's fast path imports nothing of the worker",
            "memory.hookclient.entry -> memory.privacy",
        ),
        (
            "protocol-stdlib",
            "memory.protocol.spool_names",
            "from memory import config",
            "The formats both programs share import only the standard library",
            "memory.protocol.spool_names -> memory.config",
        ),
        (
            "layers",
            "memory.capture.ingest",
            "from memory.hooks import dispatch",
            "Layers: programs -> interfaces -> workflows -> capabilities -> models/config",
            "memory.capture.ingest -> memory.hooks.dispatch",
        ),
        (
            "acyclic",
            "memory.ledger.prices",
            "from memory.compression import replies",
            "No import cycles: between memory's rooms, and inside each room",
            "No cycles are allowed in memory.",
        ),
        (
            "no-tests",
            "deliverables.services",
            "import tests.fakes",
            "Application code never imports the test tree",
            "deliverables.services -> tests",
        ),
        (
            "adapters",
            "memory.agents.claude_code",
            "from memory import ledger",
            "Agent adapters translate payloads and import no service",
            "memory.agents.claude_code -> memory.ledger",
        ),
        (
            "layers",
            "memory.models",
            "from memory import ledger",
            "Layers: programs -> interfaces -> workflows -> capabilities -> models/config",
            "memory.models -> memory.ledger",
        ),
        (
            "layers",
            "memory.ledger",
            "from memory import admin",
            "Layers: programs -> interfaces -> workflows -> capabilities -> models/config",
            "memory.ledger -> memory.admin",
        ),
        (
            "acyclic",
            "memory.team.tokens",
            "from memory.team import auth",
            "No import cycles: between memory's rooms, and inside each room",
            "No cycles are allowed in memory.team.",
        ),
    ],
    ids=lambda value: value if isinstance(value, str) and " " not in value else None,
)
def test_a_forbidden_import_breaks_its_contract(
    tree_copy: Path, contract: str, module: str, line: str, expected: str, evidence: str
) -> None:
    before = lint_imports(tree_copy, "--contract", contract)
    assert evidence not in before.stdout
    inject(tree_copy, module, line)
    after = lint_imports(tree_copy, "--contract", contract)
    assert after.returncode != 0, after.stdout[-4000:]
    assert f"{expected}" in after.stdout and "BROKEN" in after.stdout
    # The report names the import that was added (or the cycle it closed).
    assert evidence in after.stdout, after.stdout[-4000:]
